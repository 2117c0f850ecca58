#!/usr/bin/env bash
# Dev use (device tool), seventh session: isolates nvJPEG in the JPEG-vs-synthetic gap: WTConvNeXt-T bf16
# from JPEGs decoded by libjpeg-turbo on the CPU with the same GPU transform, against synthetic data
# through it, 100-step epochs.
set -uo pipefail
source dev/run-lib.sh
el built
JF=/tmp/jf7
jpeg_folder $JF 320 16
folder_ready $JF
el folder
eval train3 jpeg_turbo_gpu --workers 14 --dataset image_folder --data-dir $JF --val-split validation --decode cpu --jpeg-decoder turbo --gpu-augment true
eval train3 synth_gpu --workers 14 --dataset synthetic --synthetic-size 12800 --gpu-augment true
el done
