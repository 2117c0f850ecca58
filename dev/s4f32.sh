#!/usr/bin/env bash
# Dev use (device tool): fp32 / tf32 bench after restricting the BGRADB epilogue to bf16.
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
el built
timeout 60 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > $OUT/ops.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/ops.log | head -4
timeout 90 /tmp/b/haargrad bench --device cuda --batch 128 --img-size 224 --precision fp32,tf32,bf16 --models convnext_tiny --steps 5 --warmup 2 > $OUT/bench.txt 2>&1; grep -A4 "^model  " $OUT/bench.txt | head -5
el done
