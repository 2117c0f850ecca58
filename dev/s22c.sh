#!/usr/bin/env bash
# Dev use (device tool), prebuilt binaries (dev/labbin-pack.sh):
#   hg_base  HEAD ef2ea87's program;
#   hg_new   the whole-plane forward in one wave of blocks, each taking several images in turn
#            (filters staged once a block; no prefetch), and the backward's pyramids of x and G
#            in one pass (one barrier a level for both);
#   hg_new2  hg_new with the forward one image a block again (the pyramids' change alone).
# GPU tests of hg_new's tree, bench-layer bf16 twice and fp32 once, the models' bf16 twice, and
# the launch sequences at 384 and 768 channels.
NAME=s22c
source dev/labbin-lib.sh
ab_rows hg_base hg_new hg_new2
seq_each 384 hg_base hg_new hg_new2; seq_each 768 hg_base hg_new hg_new2; el seqs
ab_summary
for c in 384 768; do for v in hg_base hg_new hg_new2; do echo "== $c $v"; sed -n 8,12p $OUT/seq-$c-$v.txt | cut -c1-100; done; done
