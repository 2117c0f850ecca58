#!/usr/bin/env bash
# Dev use (device tool), eleventh session, final call on the submitted code (issue 13's acceptance in
# one run, within the session's last ~380 s of device time): the nvJPEG and GPU-loader tests;
# WTConvNeXt-T bf16 from JPEGs (decode nvjpeg) against synthetic data through the same GPU transform
# (op by op from JPEGs, as the trainer runs nvjpeg; graphed from synthetic data), 100-step epochs;
# the loader alone per decode backend beside torchvision's DataLoader with the same 14 workers.
set -uo pipefail
python3 scripts/make-jpeg-folder.py --out /tmp/jf8 --classes 40 --train-per-class 320 --val-per-class 4 --jobs 14 > /tmp/mk-jf8.log 2>&1 &
MK=$!
source dev/run-lib.sh
el built
timeout 60 /tmp/b/tests/test_gpu --gtest_filter='Nvjpeg*:GpuLoader*:GpuCropResize*' > $OUT/gpu.log 2>&1; ok $OUT/gpu.log
grep -A4 "Failure" $OUT/gpu.log | head -12
el tests
folder_ready /tmp/jf8
jpeg_vs_synth /tmp/jf8
grep -h "training step:\|JPEG decoder thread" $OUT/train-*.log | cut -c12-200 | tail -4
el train
timeout 90 $HG bench-data configs/convnext_tiny.yaml --device cuda --precision bf16 --dataset image_folder --data-dir /tmp/jf8 --val-split validation --workers 14 --batch-size 128 --img-size 224 --aa '' --reprob 0 --color-jitter 0 --mixup 0 --cutmix 0 --train-interpolation bilinear --max-steps-per-epoch 20 --bench-warmup 1 --bench-epochs 1 --decoders turbo,nvjpeg,nvjpeg_gpu --output $OUT/bench_data.json > $OUT/bench_data.txt 2>&1; grep -E "^decoder|^(stb|turbo|nvjpeg)" $OUT/bench_data.txt | cut -c1-150
timeout 60 python3 scripts/peer-data-bench.py --data-dir /tmp/jf8 --workers 14 --batch-size 128 --img-size 224 --bench-warmup 1 --bench-epochs 1 --output $OUT/peer_data.json > $OUT/peer_data.txt 2>&1; tail -2 $OUT/peer_data.txt
el done
