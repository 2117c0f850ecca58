#!/usr/bin/env bash
# Dev use (device tool), sixth session, check of the one-pass LayerNorm backward: GPU tests, bench.
set -uo pipefail
source dev/run-lib.sh
el built
timeout 150 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > $OUT/ops.log 2>&1; ok $OUT/ops.log
timeout 100 /tmp/b/tests/test_gpu > $OUT/gpu.log 2>&1; ok $OUT/gpu.log
el tests
timeout 60 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16,fp32 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 6 --warmup 2 2>&1 | grep -A5 "^model  " | head -6 | cut -c1-150
el done
