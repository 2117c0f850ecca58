#!/usr/bin/env bash
# Thirty-seventh session: issue 12's launches per step and per-kernel times of the submitted
# program (Nsight Compute's launch sequence of bench-layer bf16, B = 64, K = 5) at every stage
# shape: $OUT/seq-C.txt. Pack: KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s37c
source dev/labbin-lib.sh
for c in 96 192 384 768; do ncu_seq_at hg_new $c; echo "== C=$c"; tail -4 $OUT/seq-$c.txt; done
el done
