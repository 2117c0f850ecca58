#!/usr/bin/env bash
# Dev use (device tool), eighth session: the loader's GPU thread waits by sleeping between event
# queries (hg::cuda::wait_polling) instead of spinning in cudaEventSynchronize. dev/nvjpeg_probe.cu
# with a spinning and a polling decode thread; test_gpu; WTConvNeXt-T bf16 from JPEGs against
# synthetic data.
set -uo pipefail
python3 scripts/make-jpeg-folder.py --out /tmp/jp --classes 40 --train-per-class 8 --val-per-class 1 --jobs 16 > /tmp/mk.log 2>&1 &
MKP=$!
nvcc -O2 -std=c++17 -arch=sm_90 dev/nvjpeg_probe.cu -lnvjpeg -o /tmp/nvjpeg_probe &
source dev/run-lib.sh
el built
wait
echo "== probe, spinning wait"; timeout 60 /tmp/nvjpeg_probe /tmp/jp/train 128 time | grep -E "RGBI"
echo "== probe, polling wait"; timeout 60 /tmp/nvjpeg_probe /tmp/jp/train 128 time poll | grep -E "RGBI"
el probe
jpeg_folder /tmp/jf8 320 14
timeout 100 /tmp/b/tests/test_gpu > $OUT/gpu.log 2>&1; ok $OUT/gpu.log
grep -A4 "Failure" $OUT/gpu.log | head -10
el tests
folder_ready /tmp/jf8
jpeg_vs_synth /tmp/jf8
el done
