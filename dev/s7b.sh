#!/usr/bin/env bash
# Dev use (device tool), seventh session: whole-plane WTConv kernels after the lane-offset fix:
# WTConv GPU tests, bench-layer, and ncu (time per kernel, stall reasons) of the plane kernels.
set -uo pipefail
source dev/run-lib.sh
el built
timeout 200 /tmp/b/tests/test_ops --gtest_filter='WTConvGpu*:Shapes/WTConvGpu*:Gpu/OpDevice.*wtconv*' > $OUT/ops-wt.log 2>&1; ok $OUT/ops-wt.log
grep -A4 "Failure" $OUT/ops-wt.log | head -30
echo "OK: $(grep -c '^\[       OK' $OUT/ops-wt.log)"
el tests
for p in bf16 fp32; do echo "== $p"; timeout 60 $HG bench-layer --kernel 5 --precision $p > $OUT/bl-$p.txt 2>&1; grep -E "^(impl|wtconv fused|ours dw 7)|error" $OUT/bl-$p.txt | cut -c1-150; done
el bench-layer
for c in 384 768; do
timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw $HG bench-layer --kernel 5 --precision bf16 --channels $c --iters 2 --warmup 0 > $OUT/ncu-t$c.csv 2>/dev/null
python3 dev/ncu_sum.py $OUT/ncu-t$c.csv 1 | head -24
done
el ncu-time
timeout 120 ncu --clock-control none --kernel-name regex:'plane_(forward|backward)' --launch-count 2 --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis $HG bench-layer --kernel 5 --precision bf16 --channels 384 --iters 1 --warmup 0 > $OUT/ncu-detail.txt 2>&1
grep -E "plane_|Duration|Throughput|Achieved Occupancy|Theoretical Occupancy|Registers|Block Limit|Warp Cycles Per Issued|Issue Slots Busy|Executed Ipc|Stall|L1/TEX Hit|Bank" $OUT/ncu-detail.txt | cut -c1-120 | head -70
el done
