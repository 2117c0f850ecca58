#!/usr/bin/env bash
# Dev use (device tool), twentieth session's second call, prebuilt binaries (dev/labbin-pack.sh):
#   hg_base  commit e390270's program;
#   hg_new   the tree: haar_conv_kernel's phase 1 with 4 items a thread in flight (kBatch 2 -> 4).
# GPU tests (the tree's), bench-layer bf16 A/B twice, the models' bf16 bench A/B, then Nsight's
# launch sequence of hg_base's bench-layer bf16 at C = 192, 384, 768 (the small kernels there).
# Outcome: no change (0.645 -> 0.644 / 0.648 ms at 96/56/5); kBatch 4 was not committed.
NAME=s20b
source dev/labbin-lib.sh
ab_call
for c in 192 384 768; do ncu_seq_at hg_base $c; done
el seqs
ab_summary
tail -1 $OUT/seq-96.txt
# (Rewritten onto dev/labbin-lib.sh's ncu_seq_at and ab_summary after the call ran: the same commands.)
