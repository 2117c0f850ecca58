#!/usr/bin/env bash
# Dev use (device tool), eighth session, the submitted commit: GPU tests, WTConvNeXt-T bf16 from
# JPEGs (nvjpeg) against synthetic data, the model bench.
set -uo pipefail
source dev/run-lib.sh
el built
jpeg_folder /tmp/jf8 320 14
gpu_tests
el tests
folder_ready /tmp/jf8
jpeg_vs_synth /tmp/jf8
el train
timeout 60 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 6 --warmup 2 2>&1 | grep -A3 "^model  " | cut -c1-150
el done
