#!/usr/bin/env bash
# Dev use on the GPU machine (device tool): build, the GPU tests, bench of both models in the
# given precisions (default all three), bench-layer in fp32 and bf16, a bf16 breakdown of
# ConvNeXt-T. Full logs under $OUT; a short summary on stdout.
set -uo pipefail
source dev/gpu-build.sh
PRECS=${PRECS:-fp32,tf32,bf16}
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
el built
timeout 120 /tmp/b/tests/test_gpu > $OUT/gpu-tests.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/gpu-tests.log | head -8
timeout 120 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > $OUT/ops-gpu.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/ops-gpu.log | head -8
el tests
timeout 200 /tmp/b/haargrad bench --device cuda --batch 128 --img-size 224 --precision $PRECS --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 8 --warmup 3 > $OUT/bench.txt 2>&1; grep -A8 "^model  " $OUT/bench.txt | head -12; grep -E "train " $OUT/bench.txt | head -8
el bench
for p in fp32 bf16; do timeout 60 /tmp/b/haargrad bench-layer --kernel 5 --precision $p > $OUT/bench-layer-$p.txt 2>&1; done
timeout 100 /tmp/b/haargrad bench --device cuda --batch 128 --img-size 224 --precision bf16 --models ${BREAKDOWN_MODELS:-convnext_tiny} --breakdown --steps 5 --warmup 2 > $OUT/breakdown.txt 2>&1; grep -B2 -A14 "^op type" $OUT/breakdown.txt | head -40
el done
