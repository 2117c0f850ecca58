#!/usr/bin/env bash
# Dev use on the GPU machine (device tool): build, the GPU decode/augment tests, the loader per
# decode backend beside torchvision, training WTConvNeXt-T bf16 from the JPEG folder against
# synthetic data, and the step's memory. Logs under $OUT.
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
el built; grep -E "nvJPEG|NCCL|MPI" /tmp/b.log | head -4
timeout 120 /tmp/b/tests/test_gpu --gtest_filter='*Nvjpeg*:*CropResize*:*GpuLoader*' > $OUT/t-gpu.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]|decoder|backend" $OUT/t-gpu.log | head -20
timeout 60 /tmp/b/tests/test_data --gtest_filter='GpuStage*' 2>&1 | grep -E "^\[  (FAILED|PASSED)|FAILED  \]"
el tests
STAGES=data-bench BUILD=/tmp/b JPEG_PER_CLASS=${JPEG_PER_CLASS:-250} timeout 300 scripts/gpu-check.sh > $OUT/data-bench.txt 2>&1; grep -vE "^\s*$" $OUT/data-bench.txt | tail -25
el data-bench
R="configs/wtconvnext_tiny.yaml --device cuda --precision bf16 --num-classes 20 --epochs 2 --warmup-epochs 0 --grad-accum-steps 1 --aa '' --reprob 0 --color-jitter 0 --mixup 0 --cutmix 0 --train-interpolation bilinear --workers 14 --output /tmp/runs --plain"
for d in "--dataset synthetic --synthetic-size 5000" "--dataset image_folder --data-dir /tmp/hg-jpeg-folder --val-split validation --decode nvjpeg" "--dataset image_folder --data-dir /tmp/hg-jpeg-folder --val-split validation"; do
  timeout 100 /tmp/b/haargrad train $R $d --experiment "r$RANDOM" > $OUT/train-jpeg.log 2>&1; echo "$d: $(grep -E 'done:|error' $OUT/train-jpeg.log | tail -1 | cut -c1-200)"; done
el train
# (the arena experiment this loop once toggled is gone: one allocator serves the step)
timeout 60 /tmp/b/haargrad bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny --steps 6 --warmup 3 2>&1 | grep -E "convnext_tiny +bf16 +(128|train)"
el done
