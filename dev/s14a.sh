#!/usr/bin/env bash
# Dev use (device tool), fourteenth session: why the nvJPEG decoder thread takes ~36-39 ms a batch
# beside a graphed training step (10-14 ms beside steps launched op by op). The tree with
# dev/nvjpeg-graph.patch applied (the backed-out graph experiment) is built into /tmp/bg (the
# program only), then WTConvNeXt-T bf16 trains from one JPEG folder, graphed:
#   1. as is;  2. with CUDA_DEVICE_MAX_CONNECTIONS=32 (the driver's hardware queues: with the
#   default 8, two streams may share one queue, and then the decode's work waits behind all the
#   step's work queued before it, a whole step when it is one graph);
#   3. under Nsight Systems (CUDA calls only), summarised by dev/nsys_threads.py (calls per thread)
#   and dev/nsys_queue.py (how long each thread's kernels waited in the queue).
set -uo pipefail
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
SRC=$PWD
D=$PWD/.deps/root/usr; export LD_LIBRARY_PATH=$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
NSYS=$(command -v nsys || ls /opt/nvidia/nsight-*/*/host/target-linux-x64/nsys 2>/dev/null | head -1)
[ -d /tmp/jf8/train ] || python3 scripts/make-jpeg-folder.py --out /tmp/jf8 --classes 40 --train-per-class 320 \
  --val-per-class 4 --jobs 14 > /tmp/mk-jf8.log 2>&1 &
MKP=$!
rm -rf /tmp/gx && mkdir -p /tmp/gx && tar --exclude=./.git --exclude=./.deps -cf - . | tar -C /tmp/gx -xf -
cd /tmp/gx && git apply dev/nvjpeg-graph.patch || exit 1
B=/tmp/bg
[ -f $B/build.ninja ] || cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHAARGRAD_CUDA=ON \
  -DBUILD_TESTING=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D -DCMAKE_INCLUDE_PATH=$D/include > /tmp/bg.log 2>&1
cmake --build $B -j16 --target haargrad >> /tmp/bg.log 2>&1 || { grep -iE -A5 "error" /tmp/bg.log | head -40; exit 1; }
wait $MKP; tail -1 /tmp/mk-jf8.log
el "built, folder ready"
TRAIN="configs/wtconvnext_tiny.yaml --num-classes 40 --output /tmp/runs --plain --device cuda --precision bf16 --warmup-epochs 1 --lr 1e-3 --grad-accum-steps 1 --aa '' --reprob 0 --mixup 0 --cutmix 0 --color-jitter 0 --model-ema false --workers 14 --dataset image_folder --data-dir /tmp/jf8 --val-split validation --decode nvjpeg"
show() { grep -E "JPEG decoder thread|training step:|done:|rror" $1 | cut -c12-220; }
eval timeout 60 $B/haargrad train $TRAIN --epochs 2 --experiment g_plain '>' $OUT/g_plain.log '2>&1'; show $OUT/g_plain.log; el "graphed"
eval CUDA_DEVICE_MAX_CONNECTIONS=32 timeout 60 $B/haargrad train $TRAIN --epochs 2 --experiment g_conn32 '>' $OUT/g_conn32.log '2>&1'
show $OUT/g_conn32.log; el "graphed, 32 connections"
for mode in ${MODES:-graph}; do
  extra=""; [ $mode = eager ] && extra="--cuda-graph false"
  eval timeout 150 $NSYS profile -t cuda -s none --cpuctxsw none --force-overwrite true -o /tmp/nv-$mode \
    $B/haargrad train $TRAIN --epochs 1 --experiment nv_$mode $extra '>' $OUT/nv_$mode.log '2>&1'
  echo "nsys rc $?"; show $OUT/nv_$mode.log; el "$mode traced"
  timeout 120 $NSYS stats -r cuda_api_trace,cuda_kern_exec_trace --format csv -o /tmp/nv-$mode /tmp/nv-$mode.nsys-rep > /tmp/stats.log 2>&1
  echo "stats rc $?"; ls -la /tmp | grep nv-$mode
  python3 $SRC/dev/nsys_threads.py /tmp/nv-${mode}_cuda_api_trace.csv
  python3 $SRC/dev/nsys_queue.py /tmp/nv-${mode}_cuda_kern_exec_trace.csv
  el "$mode summarised"
done
