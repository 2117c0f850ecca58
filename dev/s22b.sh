#!/usr/bin/env bash
# Dev use (device tool), prebuilt binaries (dev/labbin-pack.sh):
#   hg_base  HEAD ef2ea87's program;
#   hg_new   the whole-plane kernels with one wave of blocks, each taking several images in turn:
#            the forward stages its filters once a block and prefetches the next image's plane
#            (cp.async into a second buffer) while computing one; the backward's slices fewer.
# ab_call with fp32 (GPU tests of hg_new's tree, incl. a 797-image case), launch sequences at 384
# and 768 channels of both programs.
NAME=s22b
source dev/labbin-lib.sh
ab_call fp32
seq_each 384 hg_base hg_new; seq_each 768 hg_base hg_new; el seqs
ab_summary
for c in 384 768; do for v in hg_base hg_new; do echo "== $c $v"; sed -n 8,12p $OUT/seq-$c-$v.txt | cut -c1-100; done; done
sed -n 9,30p $OUT/seq-96.txt | cut -c1-100
