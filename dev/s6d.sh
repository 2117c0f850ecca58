#!/usr/bin/env bash
# Dev use (device tool), sixth session: training from JPEGs against synthetic data over longer epochs
# (12,800 images, 100 steps an epoch), GPU tests, bench with the host-sync column.
set -uo pipefail
source dev/run-lib.sh
el built
JF=/tmp/jf7
jpeg_folder $JF 320 12
timeout 150 /tmp/b/tests/test_gpu > $OUT/gpu.log 2>&1; ok $OUT/gpu.log
el tests
timeout 80 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 6 --warmup 2 2>&1 | grep -E -A5 "^model  " | cut -c1-160
el bench
wait $MK; tail -1 /tmp/mk-$(basename $JF).log
el folder
W=14
R="configs/wtconvnext_tiny.yaml --num-classes 40 --workers $W --output /tmp/runs --plain --device cuda --precision bf16 --warmup-epochs 1 --lr 1e-3 --epochs 3 --grad-accum-steps 1 --aa '' --reprob 0 --mixup 0 --cutmix 0 --color-jitter 0 --model-ema false"
r() { n=$1; shift; timeout $(( $(left) > 110 ? 110 : $(left) )) $HG train $R --experiment $n "$@" > $OUT/train-$n.log 2>&1; echo "== $n: $(grep -E 'done:|error' $OUT/train-$n.log | tail -1 | cut -c1-220)"; grep -E "epoch [0-9]/3:" $OUT/train-$n.log | sed -E 's/.*(epoch [0-9]\/3).*top-5 [0-9.]+%, /\1 /' | cut -c1-150; }
eval r jpeg_nvjpeg --dataset image_folder --data-dir $JF --val-split validation --decode nvjpeg
eval r synth_gpu --dataset synthetic --synthetic-size 12800 --gpu-augment true
eval r synth_cpu --dataset synthetic --synthetic-size 12800
el done
