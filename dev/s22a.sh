#!/usr/bin/env bash
# Dev use (device tool), twenty-second session's first call, prebuilt binaries (dev/labbin-pack.sh):
#   hg_new  HEAD ef2ea87's program (2b8f401's copy_many review commit never ran on a GPU).
# GPU tests of HEAD's tree, bench-layer bf16 and fp32, and Nsight's launch sequence of bench-layer
# bf16 at each stage shape (WTConv fused, the reference order and our 7x7, one iteration each).
NAME=s22a
source dev/labbin-lib.sh
gpu_tests; el tests
{ layer_rows bf16 hg_new; layer_rows fp32 hg_new; } > $OUT/bench-layer.txt 2>&1; el bench-layer
for c in 96 192 384 768; do ncu_seq_at hg_new $c; done; el seq
cat $OUT/tests.txt $OUT/bench-layer.txt
for c in 96 192 384 768; do echo "== seq $c"; cat $OUT/seq-$c.txt; done | cut -c1-110
