#!/usr/bin/env bash
# Dev use (device tool), prebuilt binaries (dev/labbin-pack.sh):
#   hg_base  commit e2f4540's program (one pass of the backward's two pyramids, ...);
#   hg_new   e2f4540 with the whole-plane cascade in two phases: the convolutions of levels
#            1 .. L-1 in one pool of items (t_l stored), then level 0's items, which form rec_1
#            from the stored t_l (the same f32 operations as the level-by-level cascade).
# GPU tests of hg_new's tree, bench-layer bf16 twice and fp32 once, the models' bf16 twice, and
# hg_new's launch sequences at 384 and 768 channels.
NAME=s22f
source dev/labbin-lib.sh
ab_rows hg_base hg_new
seq_each 384 hg_new; seq_each 768 hg_new; el seqs
ab_summary | grep -v "ours dw"
for c in 384 768; do echo "== $c hg_new"; sed -n 7,12p $OUT/seq-$c-hg_new.txt | grep plane | cut -c1-100; done
