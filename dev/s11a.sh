#!/usr/bin/env bash
# Dev use (device tool), eleventh session, first call: the GPU tests on the tenth session's last two
# commits (2574b97, 54ec867, never run on a GPU), and dev/nvjpeg_probe.cu with the busy kernels on
# the legacy, the per-thread default and a non-blocking stream: does a hardware decode wait for the
# work queued on the streams that synchronise with the legacy one?
set -uo pipefail
python3 scripts/make-jpeg-folder.py --out /tmp/jp --classes 40 --train-per-class 8 --val-per-class 1 --jobs 8 > /tmp/mk.log 2>&1 &
MKP=$!
nvcc -O2 -std=c++17 -arch=sm_90 dev/nvjpeg_probe.cu -lnvjpeg -o /tmp/nvjpeg_probe &
source dev/run-lib.sh
el built
wait $MKP
for s in legacy perthread nonblocking; do
  echo "== probe, poll, busy on $s"
  timeout 60 /tmp/nvjpeg_probe /tmp/jp/train 128 time poll $s | grep -E "busy kernel|RGBI|YUV"
done
el probe
gpu_tests
el tests
