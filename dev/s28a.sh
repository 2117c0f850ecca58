#!/usr/bin/env bash
# Dev use (device tool), twenty-eighth session: the submitted commit's GPU tests (the twenty-seventh
# session's stop-signal changes never ran on a GPU), the smoke config on the GPU in bf16 to its end
# and stopped by SIGINT, and Nsight's launch sequences of one WTConv training step at the model's
# batch (B = 128) at C = 96 and 384 (the earlier sequences were B = 64).
# Pack: KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s28a
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
$L/hg_new train configs/smoke.yaml --device cuda --precision bf16 --output /tmp/runs \
  --experiment smoke_bf16 --plain > $OUT/smoke.log 2>&1; echo "smoke rc $?"; tail -3 $OUT/smoke.log
$L/hg_new train configs/smoke.yaml --device cuda --precision bf16 --output /tmp/runs \
  --experiment smoke_stop --plain --epochs 200 > $OUT/stop.log 2>&1 &
sleep 6; kill -INT $!; wait $!; echo "stopped run rc $?"; grep -iE "stop|signal|recovery|saved" $OUT/stop.log | tail -4
ls /tmp/runs/ 2>&1 | head
el smoke
for c in 96 384; do
  timeout 90 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
    $L/hg_new bench-layer --precision bf16 --batch 128 --channels $c --warmup 0 --iters 1 \
    > $R/ncu-$c.csv 2> /dev/null
  python3 dev/ncu_seq.py $R/ncu-$c.csv 0 100000 > $OUT/seq128-$c.txt; tail -1 $OUT/seq128-$c.txt
done
el ncu
timeout 60 $L/hg_new bench-layer --kernel 5 --precision bf16 --batch 128 > $OUT/bl128.txt 2>&1
grep -E "^(wtconv fused|ours dw 7)" $OUT/bl128.txt
el done
