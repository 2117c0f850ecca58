#!/usr/bin/env bash
# Dev use (device tool), twenty-seventh session: the submitted commit's GPU tests, and the smoke
# config on the GPU in bf16, once to its end and once stopped by SIGINT (the stop-signal changes
# of this session run on every device). Pack: rm the lab programs from build/labbin, then
# KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s27d
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
$L/hg_new train configs/smoke.yaml --device cuda --precision bf16 --output /tmp/runs \
  --experiment smoke_bf16 --plain > $OUT/smoke.log 2>&1; echo "smoke rc $?"; tail -3 $OUT/smoke.log
$L/hg_new train configs/smoke.yaml --device cuda --precision bf16 --output /tmp/runs \
  --experiment smoke_stop --plain --epochs 200 > $OUT/stop.log 2>&1 &
sleep 6; kill -INT $!; wait $!; echo "stopped run rc $?"; grep -iE "stop|signal|recovery|saved" $OUT/stop.log | tail -4
ls /tmp/runs/smoke_stop* 2>&1 | head
el done
