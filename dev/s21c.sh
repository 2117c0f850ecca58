#!/usr/bin/env bash
# Dev use (device tool), twenty-first session's third call, prebuilt binaries (dev/labbin-pack.sh):
#   hg_base  commit af4b10a's program (the synthesis's unrolled tail);
#   hg_new   the tree: the whole-plane cascade's level convs by row pairs (each loaded window row
#            and tap weight serves two level-grid rows), the backward's weight-gradient sums by
#            filter-row pairs (each loaded G value serves two filter rows), unrolled by K.
# ab_call with fp32 (GPU tests of the tree, bench-layer A/B, both models' bf16 A/B, hg_new's
# launch sequence at C = 96), then both programs' launch sequences at C = 384 (14 x 14).
NAME=s21c
source dev/labbin-lib.sh
ab_call fp32
ab_summary
seq_each 384 hg_base hg_new
for v in hg_base hg_new; do echo "== $v 384"; grep -E "plane|sum " $OUT/seq-384-$v.txt | head -8; done
# (Rewritten onto dev/labbin-lib.sh's seq_each after the call ran: the same commands.)
el done
