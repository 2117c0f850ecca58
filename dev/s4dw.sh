#!/usr/bin/env bash
# Dev use (device tool): depthwise conv kernels: GPU tests, bench-layer, model bench, dw kernels under ncu.
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
el built
timeout 120 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > $OUT/ops.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/ops.log | head -12
el tests
timeout 100 /tmp/b/tests/test_gpu > $OUT/gpu.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/gpu.log | head -6
for p in bf16 fp32; do timeout 60 /tmp/b/haargrad bench-layer --kernel 5 --precision $p > $OUT/bl-$p.txt 2>&1; grep -iE "dw|C/H|96|192|384|768" $OUT/bl-$p.txt | head -14; done
el bench-layer
timeout 150 /tmp/b/haargrad bench --device cuda --batch 128 --img-size 224 --precision ${PRECS:-bf16,fp32} --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 8 --warmup 3 > $OUT/bench.txt 2>&1; grep -A6 "^model  " $OUT/bench.txt | head -8
el bench
timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw -k regex:"conv_staged|wgrad_staged|reduce_slices|forward_kernel|backward_data|column_sum|fill_kernel|axpy|convert_kernel|splitKreduce" \
  /tmp/b/haargrad bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny --steps 1 --warmup 1 > $OUT/ncu-dw.csv 2>/dev/null
python3 dev/ncu_sum.py $OUT/ncu-dw.csv 2 2>/dev/null | head -16
el done
