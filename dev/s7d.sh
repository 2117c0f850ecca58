#!/usr/bin/env bash
# Dev use (device tool), seventh session: WTConvNeXt-T bf16 training from JPEGs (nvjpeg, 14 and 4
# loader workers) against synthetic data through the GPU transform, 100-step epochs: does host
# contention from the workers slow the step?
set -uo pipefail
source dev/run-lib.sh
el built
JF=/tmp/jf7
jpeg_folder $JF 320 16
folder_ready $JF
el folder
eval train3 jpeg_nvjpeg14 --workers 14 --dataset image_folder --data-dir $JF --val-split validation --decode nvjpeg
eval train3 synth_gpu --workers 14 --dataset synthetic --synthetic-size 12800 --gpu-augment true
eval train3 jpeg_nvjpeg4 --workers 4 --dataset image_folder --data-dir $JF --val-split validation --decode nvjpeg
el done
