#!/usr/bin/env bash
# One device call for the session's figures (dev use): build, GPU tests, golden, bench of both
# models x fp32/tf32/bf16, timm peers in the same run, Fashion-MNIST in bf16. Logs under $OUT.
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
el built
timeout 90 /tmp/b/tests/test_gpu > $OUT/gpu-tests.log 2>&1; grep -E "^\[  (FAILED|PASSED)|golden .* cuda\]|FAILED  \]" $OUT/gpu-tests.log | head -12
timeout 90 /tmp/b/tests/test_ops --gtest_filter='*Gpu*' > $OUT/ops-gpu.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/ops-gpu.log | head -12
timeout 60 /tmp/b/tests/test_models --gtest_filter='Golden*' > $OUT/golden-cpu.log 2>&1; grep -E "golden bf16|PASSED|FAILED" $OUT/golden-cpu.log | head -6
el tests
timeout 150 /tmp/b/haargrad bench --device cuda --batch 128 --img-size 224 --precision fp32,tf32,bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 8 --warmup 3 --output $OUT/bench.json > $OUT/bench.txt 2>&1; grep -A8 "^model  " $OUT/bench.txt | head -30
el bench
timeout 130 python3 scripts/peer-bench.py --steps 10 --warmup 4 --modes amp_bf16,compile_bf16,tf32 --output $OUT/peer_bench.json 2>&1 | tail -5
el peer
timeout 100 /tmp/b/haargrad train configs/fashion_mnist.yaml --device cuda --precision bf16 --data-dir $PWD/.fmnist --output /tmp/runs --experiment fmnist_bf16 --workers 8 > $OUT/train_fmnist_bf16.log 2>&1; tail -3 $OUT/train_fmnist_bf16.log; cp /tmp/runs/fmnist_bf16/summary.csv $OUT/fmnist_bf16_summary.csv 2>/dev/null
el done
