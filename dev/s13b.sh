#!/usr/bin/env bash
# Dev use (device tool), thirteenth session: s13a showed the nvJPEG decoder thread taking ~36 ms a
# batch beside the graphed step whatever share of the batch it decodes (0.6 of it: 36 ms; all:
# 39 ms, twelfth session), i.e. about one graphed step: as if each decode waited for the training
# work queued so far. Suspect: BlockCache::put synchronising the legacy stream for blocks nvJPEG
# frees with stream 0 (the per-thread training stream is a blocking one). Now such frees wait for
# the decode stream; the log counts them. Runs: synthetic graphed; nvjpeg graphed (load 1); nvjpeg
# graphed at load 0.45 under a watchdog (s13a's 0.45 and 0.3 runs stopped after step 50: a
# backtrace of every thread if the log stalls for 25 s). All GPU tests first (the last call).
set -uo pipefail
source dev/run-lib.sh
jpeg_folder /tmp/jf8 320 14
el built
gpu_tests
el tests
folder_ready /tmp/jf8
J="--workers 14 --dataset image_folder --data-dir /tmp/jf8 --val-split validation --decode nvjpeg"
eval train3 synth_gpu --workers 14 --dataset synthetic --synthetic-size 12800 --gpu-augment true
eval train3 nv_graph_1 $J
el "two runs"
watch_run() {  # NAME ARGS...: train3 in the background; on a 25 s stall, every thread's stack
  n=$1; shift
  eval train3 $n "$@" > $OUT/watch-$n.txt 2>&1 &
  W=$!; last=0; same=0
  while kill -0 $W 2>/dev/null; do
    sleep 5; sz=$(stat -c %s $OUT/train-$n.log 2>/dev/null || echo 0)
    if [ "$sz" = "$last" ]; then same=$((same + 5)); else same=0; last=$sz; fi
    if [ $same -ge 25 ]; then
      P=$(pgrep -f "experiment $n" | head -1); echo "stalled: pid $P"
      if command -v gdb >/dev/null; then gdb -batch -p $P -ex "thread apply all bt 12" > $OUT/bt-$n.txt 2>&1
      else for t in /proc/$P/task/*; do echo "$t $(cat $t/comm) $(cat $t/wchan)"; cat $t/stack 2>/dev/null | head -8; done > $OUT/bt-$n.txt; fi
      grep -E "^Thread|^#[0-9]+ " $OUT/bt-$n.txt | grep -vE "libc\.so|pthread_cond|futex|clone|start_thread" | cut -c1-160 | head -60
      kill $P; break
    fi
  done
  wait $W; cat $OUT/watch-$n.txt
}
watch_run nv_graph_045 $J --hw-decoder-load 0.45
grep -H "training step:\|JPEG decoder thread\|nvJPEG: [0-9]" $OUT/train-*.log | sed -E 's/^[^:]*train-//' | cut -c1-230
if [ $(left) -gt 70 ]; then
  timeout 60 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 > $OUT/bench.txt 2>&1; grep -A30 "^model  " $OUT/bench.txt | cut -c1-170 | grep -v "^$\|^timed\|^syncs\|replayed" | head -12
fi
el done
