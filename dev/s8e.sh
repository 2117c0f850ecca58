#!/usr/bin/env bash
# Dev use (device tool), eighth session, the submitted commit: GPU tests; WTConvNeXt-T bf16 from
# JPEGs (nvjpeg with cuda_wait auto = block, and spin) against synthetic data (CUDA's default wait,
# and block); the model bench. The cuda_wait key it passes was measured here and then removed:
# blocking waits slowed the synthetic run 6% and did not help the JPEG one (docs/perf-notes.md).
set -uo pipefail
source dev/run-lib.sh
el built
jpeg_folder /tmp/jf8 320 14
gpu_tests
el tests
folder_ready /tmp/jf8
J="--workers 14 --dataset image_folder --data-dir /tmp/jf8 --val-split validation --decode nvjpeg"
S="--workers 14 --dataset synthetic --synthetic-size 12800 --gpu-augment true"
eval train3 jpeg_auto $J; stage jpeg_auto
eval train3 synth_default $S; stage synth_default
eval train3 jpeg_spin $J --cuda-wait spin; stage jpeg_spin
eval train3 synth_block $S --cuda-wait block; stage synth_block
el train
timeout 90 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 6 --warmup 2 2>&1 | grep -A3 "^model  " | cut -c1-150
el done
