#!/usr/bin/env bash
# Dev use (device tool), prepared in the thirteenth session for the next one: which call makes the
# nvJPEG decoder thread take ~36-39 ms a batch beside a graphed training step (10-14 ms beside steps
# launched op by op; docs/perf-notes.md, thirteenth session). Builds a copy of the tree with
# dev/nvjpeg-graph.patch (the trainer's step graphed with decode: nvjpeg, a capture waiting for a
# running decode: the experiment of commit da49b99, backed out of the product) into /tmp/bg, then
# traces two short runs from the same JPEG folder with Nsight Systems (CUDA API and OS runtime
# calls), graphed and op by op, and prints per thread the calls that took the most time
# (dev/nsys_threads.py). Needs nsys on the GPU machine (checked first).
set -uo pipefail
command -v nsys >/dev/null || { echo "no nsys on this machine"; exit 1; }
rm -rf /tmp/gx && mkdir -p /tmp/gx && tar --exclude=./.git -cf - . | tar -C /tmp/gx -xf -
( cd /tmp/gx && git apply dev/nvjpeg-graph.patch && B=/tmp/bg bash dev/gpu-build.sh ) > /tmp/bg-build.log 2>&1 &
BP=$!
source dev/run-lib.sh
jpeg_folder /tmp/jf8 320 14
wait $BP; tail -3 /tmp/bg-build.log
folder_ready /tmp/jf8
el "built, folder ready"
J="--workers 14 --dataset image_folder --data-dir /tmp/jf8 --val-split validation --decode nvjpeg --epochs 2"
for mode in graph eager; do
  extra=""; [ $mode = eager ] && extra="--cuda-graph false"
  timeout 150 nsys profile -t cuda,osrt --force-overwrite true -o $OUT/nv-$mode \
    /tmp/bg/haargrad train $TRAIN3 --experiment nv_$mode $J $extra > $OUT/train-nv_$mode.log 2>&1
  grep -E "JPEG decoder thread|training step:" $OUT/train-nv_$mode.log | cut -c12-200
  nsys stats -r cuda_api_trace,osrt_trace --format csv -o $OUT/nv-$mode $OUT/nv-$mode.nsys-rep > /dev/null 2>&1
  python3 dev/nsys_threads.py $OUT/nv-${mode}_cuda_api_trace.csv $OUT/nv-${mode}_osrt_trace.csv
  el "$mode traced"
done
