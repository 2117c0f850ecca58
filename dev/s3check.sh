#!/usr/bin/env bash
# Dev use (device tool): the nvJPEG tests and WTConvNeXt-T bf16 from nvJPEG against synthetic data.
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
HG=/tmp/b/haargrad
el built
timeout 40 /tmp/b/tests/test_gpu --gtest_filter='Nvjpeg*:GpuLoader*:GpuCropResize*' > $OUT/t.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/t.log | head -5
el tests
timeout 40 python3 scripts/make-jpeg-folder.py --out /tmp/jf --classes 20 --train-per-class 130 --val-per-class 5 > /dev/null 2>&1
R="configs/wtconvnext_tiny.yaml --num-classes 20 --workers 14 --output /tmp/runs --plain --device cuda --precision bf16 --warmup-epochs 1 --lr 1e-3 --epochs 3 --aa '' --reprob 0 --mixup 0 --cutmix 0 --color-jitter 0 --model-ema false --train-interpolation bilinear --grad-accum-steps 1"
r() { n=$1; shift; timeout 35 $HG train $R --experiment $n "$@" > /tmp/x.log 2>&1; echo "== $n: $(grep -E 'done:|error' /tmp/x.log | tail -1 | cut -c1-150)"; grep -E "epoch [23]/3:" /tmp/x.log | cut -c1-200; }
eval r syn --dataset synthetic --synthetic-size 2600
eval r nvjpeg --dataset image_folder --data-dir /tmp/jf --val-split validation --decode nvjpeg
el done
