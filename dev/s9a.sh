#!/usr/bin/env bash
# Dev use (device tool), ninth session: nvJPEG's decode stream at the device's greatest priority.
# dev/nvjpeg_probe.cu with a polling decode thread at normal and at high priority; test_gpu;
# WTConvNeXt-T bf16 from JPEGs against synthetic data.
set -uo pipefail
python3 scripts/make-jpeg-folder.py --out /tmp/jp --classes 40 --train-per-class 8 --val-per-class 1 --jobs 16 > /tmp/mk.log 2>&1 &
MKP=$!
nvcc -O2 -std=c++17 -arch=sm_90 dev/nvjpeg_probe.cu -lnvjpeg -o /tmp/nvjpeg_probe &
source dev/run-lib.sh
el built
jpeg_folder /tmp/jf8 320 14
wait $MKP
echo "== probe, polling wait"; timeout 60 /tmp/nvjpeg_probe /tmp/jp/train 128 time poll | grep -E "RGBI"
echo "== probe, priority stream"; timeout 60 /tmp/nvjpeg_probe /tmp/jp/train 128 time priority | grep -E "RGBI"
el probe
timeout 100 /tmp/b/tests/test_gpu > $OUT/gpu.log 2>&1; ok $OUT/gpu.log
grep -A4 "Failure" $OUT/gpu.log | head -10
el tests
folder_ready /tmp/jf8
jpeg_vs_synth /tmp/jf8
el done
