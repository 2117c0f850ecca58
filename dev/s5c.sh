#!/usr/bin/env bash
# Dev use (device tool), fifth session's last call (little device time left): build, the GPU
# op tests, bench of both models in three precisions, bench-layer in bf16 and fp32.
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
el built
timeout 90 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > $OUT/ops.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/ops.log | head -8
el tests
timeout 60 /tmp/b/haargrad bench --device cuda --batch 128 --img-size 224 --precision fp32,tf32,bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 6 --warmup 2 > $OUT/bench.txt 2>&1; grep -A7 "^model  " $OUT/bench.txt | head -8
el bench
for p in bf16 fp32; do timeout 30 /tmp/b/haargrad bench-layer --kernel 5 --precision $p > $OUT/bl-$p.txt 2>&1; grep -E "^wtconv fused" $OUT/bl-$p.txt; done
el done
