#!/usr/bin/env bash
# Dev use (device tool), tenth session: why WTConvNeXt-T bf16 from JPEGs (nvjpeg, two lanes) stopped
# making progress with the graphed step in dev/s10b.sh: the same run graphed and op by op; a
# graphed run still going after 45 s gets every thread's stack printed (gdb), then killed.
set -uo pipefail
source dev/run-lib.sh
el built
jpeg_folder /tmp/js 64 14
folder_ready /tmp/js
GDB=$(command -v gdb || command -v cuda-gdb || echo /usr/local/cuda/bin/cuda-gdb)
echo "debugger: $GDB"
for g in true false; do
  $HG train $TRAIN3 --experiment g$g --workers 14 --dataset image_folder --data-dir /tmp/js --val-split validation --decode nvjpeg --log-interval 2 --cuda-graph $g > $OUT/train-g$g.log 2>&1 &
  P=$!
  for i in $(seq 45); do sleep 1; kill -0 $P 2>/dev/null || break; done
  if kill -0 $P 2>/dev/null; then
    echo "== cuda_graph $g: still running after 45 s; stacks:"
    timeout 60 $GDB -p $P -batch -ex "set pagination off" -ex "thread apply all bt 25" > $OUT/stacks-g$g.txt 2>&1
    grep -E "^Thread|^#[0-9] " $OUT/stacks-g$g.txt | grep -vE "in (start_thread|clone)" | cut -c1-160 | head -150
    kill -9 $P
  fi
  wait $P
  echo "== cuda_graph $g: $(grep -E 'done:|error|warn' $OUT/train-g$g.log | tail -3 | cut -c1-200)"
  grep -E "step +[0-9]+|epoch [0-9]/3:" $OUT/train-g$g.log | tail -4 | cut -c1-160
  el g$g
done
