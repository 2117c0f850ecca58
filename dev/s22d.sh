#!/usr/bin/env bash
# Dev use (device tool), prebuilt binaries (dev/labbin-pack.sh):
#   hg_base  HEAD ef2ea87's program;
#   hg_new   the backward's pyramids of x and G in one pass; the forward with f32 planes (7 x 7)
#            in one wave of blocks that stage their filters once for several images; the
#            backward's images per block rounded to two waves (B = 128: 2 at 14 x 14); the
#            cascade with 2 level-grid columns an item on grids at most 4 wide (kPlaneTQNarrow);
#   hg_new2  hg_new without the last (kPlaneNarrow = 0).
# GPU tests of hg_new's tree, bench-layer bf16 twice and fp32 once, the models' bf16 twice, and
# the launch sequences at 384 and 768 channels.
NAME=s22d
source dev/labbin-lib.sh
ab_rows hg_base hg_new hg_new2
seq_each 384 hg_base hg_new hg_new2; seq_each 768 hg_base hg_new hg_new2; seq_each 96 hg_base hg_new; el seqs
ab_summary
for c in 384 768; do for v in hg_base hg_new hg_new2; do echo "== $c $v"; sed -n 8,12p $OUT/seq-$c-$v.txt | cut -c1-100; done; done
for v in hg_base hg_new; do echo "== 96 $v"; sed -n 9,35p $OUT/seq-96-$v.txt | grep -E "plane" | cut -c1-100; done
