#!/usr/bin/env bash
# Dev use (device tool), issue 11 item 4: one allocator per step on the H200. Builds, runs the GPU
# memory tests, then bench (ConvNeXt-T and WTConvNeXt-T fused, B = 128, 224 px, every precision;
# the memory table's `ratio` = reserved / live peak of the timed steps, expected <= 1.10, allocs 0)
# and the GPU's own allocation traces (bf16, replayed: the same figures, reached from which step).
# Logs in $OUT.
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
el built
timeout 120 /tmp/b/tests/test_gpu --gtest_filter='GpuMemory*' > $OUT/gpu-memory.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/gpu-memory.log
el tests
timeout 300 /tmp/b/haargrad bench --device cuda --batch 128 --img-size 224 --precision fp32,tf32,bf16 --wtconv fused \
  --models convnext_tiny,wtconvnext_tiny --steps 10 --warmup 5 --output $OUT/bench.json > $OUT/bench.txt 2>&1
grep -vE "^\s*$" $OUT/bench.txt | grep -A30 "^model " | cut -c1-150
el bench
mkdir -p /tmp/traces
timeout 150 /tmp/b/haargrad alloc-trace --device cuda --precision bf16 --models convnext_tiny,wtconvnext_tiny \
  --batches 64,128 --scale-batch 128 --steps 5 --save /tmp/traces > $OUT/alloc-trace.txt 2>&1
grep -vE "wrote|^\s*$" $OUT/alloc-trace.txt | head -60
tar czf $OUT/traces.tgz -C /tmp traces  # replay here: haargrad alloc-trace --load FILE
el done
