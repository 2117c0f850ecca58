#!/usr/bin/env bash
# Dev use (device tool), eighth session: dev/nvjpeg_probe.cu's timing part, spinning and blocking
# waits: does a decode thread slow another thread's kernel launches (host-side contention)?
set -uo pipefail
python3 scripts/make-jpeg-folder.py --out /tmp/jp --classes 40 --train-per-class 8 --val-per-class 1 --jobs 16 > /tmp/mk.log 2>&1 &
nvcc -O2 -std=c++17 -arch=sm_90 dev/nvjpeg_probe.cu -lnvjpeg -o /tmp/nvjpeg_probe || exit 1
wait; tail -1 /tmp/mk.log
echo "== spin (default)"; timeout 120 /tmp/nvjpeg_probe /tmp/jp/train 128 time
echo "== blocking sync"; timeout 120 /tmp/nvjpeg_probe /tmp/jp/train 128 time blocking
