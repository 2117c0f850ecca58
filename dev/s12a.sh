#!/usr/bin/env bash
# Dev use (device tool), twelfth session, first call: the eleventh session's untested GPU test
# (NvjpegDecode.HostTimesCountBatches) with the other data tests, bench-layer bf16 as this
# session's baseline, and the launch sequence of one fused WTConv training step at the split-path
# shapes (96/56/5, 192/28/4, bf16) from ncu: where the 0.93 / 0.56 ms go, piece by piece.
set -uo pipefail
source dev/run-lib.sh
el built
timeout 120 /tmp/b/tests/test_gpu --gtest_filter='Nvjpeg*:GpuLoader*:GpuCropResize*' > $OUT/gpu.log 2>&1; ok $OUT/gpu.log
el tests
$HG bench-layer --precision bf16 2>&1 | tail -22
el bench-layer
for c in 96 192; do
  timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
    $HG bench-layer --precision bf16 --channels $c --warmup 0 --iters 1 > $OUT/ncu-$c.csv 2> $OUT/ncu-$c.err
  python3 dev/ncu_seq.py $OUT/ncu-$c.csv 0 100000 > $OUT/seq-$c.txt; tail -1 $OUT/seq-$c.txt
  el "ncu $c"
done
