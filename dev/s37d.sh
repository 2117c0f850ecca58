#!/usr/bin/env bash
# Thirty-seventh session, the last call: the submitted tree's GPU tests (test_gpu and every op
# harness GPU / CUDA case), then issue 12's launches per step and per-kernel times (dev/s37c.sh's
# Nsight launch sequences of bench-layer bf16, B = 64, K = 5, at every stage shape).
# Pack: KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s37d
source dev/labbin-lib.sh
tests_first
for c in 96 192 384 768; do ncu_seq_at hg_new $c; echo "== C=$c"; tail -1 $OUT/seq-$c.txt; done
el done
