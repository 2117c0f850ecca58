#!/usr/bin/env bash
# Dev use (device tool), eighth session: the crop kernel with a per-batch weight table (GPU data
# tests, then the per-batch stage times in training from JPEGs against synthetic data), and ncu's
# list of the kernels a bench-data nvjpeg epoch runs (does nvJPEG's hardware path use the SMs?).
set -uo pipefail
source dev/run-lib.sh
el built
jpeg_folder /tmp/js8 16 4; MKS=$MK
jpeg_folder /tmp/jf8 320 14
timeout 150 /tmp/b/tests/test_gpu --gtest_filter='GpuCropResize*:GpuLoader*:Nvjpeg*' > $OUT/data-gpu.log 2>&1; ok $OUT/data-gpu.log
el tests
wait $MKS; tail -1 /tmp/mk-js8.log
timeout 150 ncu --clock-control none --launch-count 400 --metrics gpu__time_duration.sum --csv --page raw \
  $HG bench-data configs/wtconvnext_tiny.yaml --device cuda --precision bf16 --dataset image_folder \
  --data-dir /tmp/js8 --val-split validation --workers 14 --batch-size 128 --img-size 224 --aa '' --reprob 0 \
  --color-jitter 0 --mixup 0 --cutmix 0 --decoders nvjpeg --bench-warmup 0 --bench-epochs 1 > $OUT/ncu-data.csv 2>$OUT/ncu-data.err
python3 dev/ncu_sum.py $OUT/ncu-data.csv 1 | head -20
el ncu
folder_ready /tmp/jf8
jpeg_vs_synth /tmp/jf8
el done
