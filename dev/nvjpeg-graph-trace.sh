#!/usr/bin/env bash
# Dev use (device tool), prepared in the thirteenth session: which call makes the nvJPEG decoder
# thread take ~36-39 ms a batch beside a graphed training step (10-14 ms beside steps launched op
# by op; docs/perf-notes.md, thirteenth session). Copies the tree to /tmp/gx, applies
# dev/nvjpeg-graph.patch (the trainer's step graphed with decode: nvjpeg, a capture waiting for a
# running decode: the experiment of commit da49b99, backed out of the product) and builds it into
# /tmp/bg (only that build); then traces short runs from one JPEG folder with Nsight Systems (CUDA
# API and OS runtime calls), graphed and op by op (MODES, default "graph eager"), and prints per
# thread the calls that took the most time (dev/nsys_threads.py). Needs nsys: the GPU machine has
# one under /opt/nvidia/nsight-compute/*/host/target-linux-x64/. Its first try (thirteenth session,
# MODES=graph EPOCHS=1) ran the traced training in ~10 s, then nsys's report was not written within
# the 150 s call: leave it a few minutes.
set -uo pipefail
NSYS=$(command -v nsys || ls /opt/nvidia/nsight-*/*/host/target-linux-x64/nsys 2>/dev/null | head -1)
[ -n "$NSYS" ] || { echo "no nsys on this machine"; exit 1; }
SRC=$PWD
[ -d /tmp/jf8/train ] || python3 scripts/make-jpeg-folder.py --out /tmp/jf8 --classes 40 --train-per-class 320 \
  --val-per-class 4 --jobs 14 > /tmp/mk-jf8.log 2>&1 &
MKP=$!
rm -rf /tmp/gx && mkdir -p /tmp/gx && tar --exclude=./.git -cf - . | tar -C /tmp/gx -xf -
cd /tmp/gx && git apply dev/nvjpeg-graph.patch || exit 1
B=/tmp/bg source dev/run-lib.sh  # builds this copy into /tmp/bg; el, TRAIN3
wait $MKP; tail -1 /tmp/mk-jf8.log
el "built, folder ready"
J="--workers 14 --dataset image_folder --data-dir /tmp/jf8 --val-split validation --decode nvjpeg --epochs ${EPOCHS:-2}"
for mode in ${MODES:-graph eager}; do
  extra=""; [ $mode = eager ] && extra="--cuda-graph false"
  eval timeout ${TRACE_S:-150} $NSYS profile -t cuda,osrt --force-overwrite true -o $OUT/nv-$mode \
    /tmp/bg/haargrad train $TRAIN3 --experiment nv_$mode $J $extra '>' $OUT/train-nv_$mode.log '2>&1'
  grep -E "JPEG decoder thread|training step:|done:" $OUT/train-nv_$mode.log | cut -c12-200
  $NSYS stats -r cuda_api_trace,osrt_trace --format csv -o $OUT/nv-$mode $OUT/nv-$mode.nsys-rep > /dev/null 2>&1
  rm -f $OUT/nv-$mode.nsys-rep $OUT/nv-$mode.sqlite  # large; the CSVs come back
  python3 $SRC/dev/nsys_threads.py $OUT/nv-${mode}_cuda_api_trace.csv $OUT/nv-${mode}_osrt_trace.csv
  ls -la $OUT/ | grep nv-$mode; rm -f $OUT/nv-${mode}_*.csv  # summarised above; large
  el "$mode traced"
done
