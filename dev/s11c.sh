#!/usr/bin/env bash
# Dev use (device tool), eleventh session: why the graphed trainer waits for nvJPEG batches. The
# decoder thread's host time per batch (new log line), graphed and op by op, with the hardware batch
# as YCbCr + one conversion kernel and backend_for parsing headers only
# (nvjpegJpegStreamParseHeader); a CPU-decode (turbo) run on the same folder (does the model learn
# from these JPEGs at all in 300 steps?); synthetic data graphed as the reference; the loader alone.
set -uo pipefail
# the folder is made while the tree builds
python3 scripts/make-jpeg-folder.py --out /tmp/jf8 --classes 40 --train-per-class 320 --val-per-class 4 --jobs 14 > /tmp/mk-jf8.log 2>&1 &
MK=$!
source dev/run-lib.sh
el built
timeout 100 /tmp/b/tests/test_gpu --gtest_filter='Nvjpeg*:YuvToRgb*:GpuLoader*:StepGraph*' > $OUT/gpu.log 2>&1; ok $OUT/gpu.log
grep -A4 "Failure" $OUT/gpu.log | head -12
el tests
folder_ready /tmp/jf8
J="--workers 14 --dataset image_folder --data-dir /tmp/jf8 --val-split validation"
bd() {
  timeout 60 $HG bench-data configs/convnext_tiny.yaml --device cuda --precision bf16 $J --batch-size 128 --img-size 224 --aa '' --reprob 0 --color-jitter 0 --mixup 0 --cutmix 0 --train-interpolation bilinear --max-steps-per-epoch 40 --bench-warmup 1 --bench-epochs 1 --decoders nvjpeg > $OUT/bench_data_$1.txt 2>&1; grep -E "^nvjpeg" $OUT/bench_data_$1.txt | cut -c1-110
}
runs() {
  for run in "$@"; do
    set -- $run; n=$1; shift
    eval train3 $n $J "$@"
    grep -E "JPEG decoder thread" $OUT/train-$n.log | tail -1 | cut -c12-200
  done
}
runs "yuv_graph --decode nvjpeg" "yuv_eager --decode nvjpeg --cuda-graph false"
eval train3 synth_gpu --workers 14 --dataset synthetic --synthetic-size 12800 --gpu-augment true
bd yuv
runs "turbo_graph --decode cpu --gpu-augment true"
el done
