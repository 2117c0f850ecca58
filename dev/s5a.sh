#!/usr/bin/env bash
# Dev use (device tool), fifth session, first call: fp32/tf32/bf16 bench of both models on the
# submitted state, bench-layer (WTConv vs dw) in bf16 and fp32, and per-kernel ncu of one
# WTConvNeXt-T bf16 step.
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
el built
timeout 120 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > $OUT/ops.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/ops.log | head -6
timeout 150 /tmp/b/haargrad bench --device cuda --batch 128 --img-size 224 --precision fp32,tf32,bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 6 --warmup 2 > $OUT/bench.txt 2>&1; grep -A8 "^model  " $OUT/bench.txt | head -10
el bench
for p in bf16 fp32; do timeout 60 /tmp/b/haargrad bench-layer --kernel 5 --precision $p > $OUT/bl-$p.txt 2>&1; cat $OUT/bl-$p.txt | head -40; done
el bench-layer
timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
    /tmp/b/haargrad bench --device cuda --batch 128 --img-size 224 --precision bf16 --models wtconvnext_tiny \
    --wtconv fused --steps 1 --warmup 1 > $OUT/ncu-wt.csv 2> $OUT/ncu-wt.err
python3 dev/ncu_sum.py $OUT/ncu-wt.csv 2 | head -45
el done
