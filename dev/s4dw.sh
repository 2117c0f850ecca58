#!/usr/bin/env bash
# Dev use (device tool): depthwise conv kernels: GPU tests, bench-layer, model bench, dw kernels under ncu.
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
el built
timeout 120 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > $OUT/ops.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/ops.log | head -12
el tests
for p in bf16 fp32; do timeout 60 /tmp/b/haargrad bench-layer --kernel 5 --precision $p > $OUT/bl-$p.txt 2>&1; grep -iE "dw|C/H|96|192|384|768" $OUT/bl-$p.txt | head -14; done
el bench-layer
timeout 150 /tmp/b/haargrad bench --device cuda --batch 128 --img-size 224 --precision ${PRECS:-bf16,fp32} --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 8 --warmup 3 > $OUT/bench.txt 2>&1; grep -A6 "^model  " $OUT/bench.txt | head -8
el bench
timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw -k regex:"rows_kernel|wgrad_staged|reduce_slices|forward_kernel|backward_data" \
  /tmp/b/haargrad bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny --steps 1 --warmup 1 > $OUT/ncu-dw.csv 2>/dev/null
python3 dev/ncu_sum.py $OUT/ncu-dw.csv 2 2>/dev/null | head -12
el done
timeout 120 ncu --clock-control none -k regex:rows_kernel -c 1 --section WarpStateStats --section SchedulerStats --section Occupancy --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  /tmp/b/haargrad bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny --steps 1 --warmup 1 > $OUT/ncu-detail.txt 2>&1
grep -E "Duration|Stall|Warp Cycles|Issued|Eligible|Active Warps|Achieved Occupancy|Theoretical Occ|Executed Ipc|Mem Busy|Max Bandwidth|L1/TEX Hit|L2 Hit|Registers|Block Limit" $OUT/ncu-detail.txt | head -40
el detail
