#!/usr/bin/env bash
# Dev use (device tool), seventh session: isolates nvJPEG in the JPEG-vs-synthetic gap: WTConvNeXt-T bf16
# from JPEGs decoded by libjpeg-turbo on the CPU with the same GPU transform, against synthetic data
# through it, 100-step epochs.
set -uo pipefail
source dev/run-lib.sh
el built
JF=/tmp/jf7
jpeg_folder $JF 320 16
wait $MK; tail -1 /tmp/mk-$(basename $JF).log
el folder
R="configs/wtconvnext_tiny.yaml --num-classes 40 --output /tmp/runs --plain --device cuda --precision bf16 --warmup-epochs 1 --lr 1e-3 --epochs 3 --grad-accum-steps 1 --aa '' --reprob 0 --mixup 0 --cutmix 0 --color-jitter 0 --model-ema false"
r() { n=$1; shift; timeout $(( $(left) > 100 ? 100 : $(left) )) $HG train $R --experiment $n "$@" > $OUT/train-$n.log 2>&1; echo "== $n: $(grep -E 'done:|error' $OUT/train-$n.log | tail -1 | cut -c1-220)"; grep -E "epoch [0-9]/3:" $OUT/train-$n.log | sed -E 's/.*(epoch [0-9]\/3).*top-5 [0-9.]+%, /\1 /' | cut -c1-150; }
eval r jpeg_turbo_gpu --workers 14 --dataset image_folder --data-dir $JF --val-split validation --decode cpu --jpeg-decoder turbo --gpu-augment true
eval r synth_gpu --workers 14 --dataset synthetic --synthetic-size 12800 --gpu-augment true
el done
