#!/usr/bin/env bash
# Dev use (device tool), eleventh session: the hardware JPEG batch decoded to YCbCr planes and
# converted by one kernel (kernels/yuv_rgb.h) instead of nvJPEG's per-image RGBI kernels, and the
# trainer's step graphed with decode: nvjpeg too (capture guarded, kernels/cuda/context.h). GPU
# tests; WTConvNeXt-T bf16 from JPEGs against synthetic data (both graphed), 100-step epochs; the
# loader alone per decode backend.
set -uo pipefail
source dev/run-lib.sh
el built
jpeg_folder /tmp/jf8 320 14
timeout 120 /tmp/b/tests/test_gpu > $OUT/gpu.log 2>&1; ok $OUT/gpu.log
grep -A4 "Failure" $OUT/gpu.log | head -20
el tests
folder_ready /tmp/jf8
jpeg_vs_synth /tmp/jf8
grep -h "training step:" $OUT/train-*.log | cut -c12-
el train
timeout 60 $HG bench-data configs/convnext_tiny.yaml --device cuda --precision bf16 --dataset image_folder --data-dir /tmp/jf8 --val-split validation --workers 14 --batch-size 128 --img-size 224 --aa '' --reprob 0 --color-jitter 0 --mixup 0 --cutmix 0 --train-interpolation bilinear --max-steps-per-epoch 20 --bench-warmup 1 --bench-epochs 1 --decoders turbo,nvjpeg --output $OUT/bench_data.json > $OUT/bench_data.txt 2>&1; grep -E "^decoder|^(stb|turbo|nvjpeg)" $OUT/bench_data.txt | cut -c1-150
el done
