#!/usr/bin/env bash
# Dev use (device tool), eighth session, the submitted commit: GPU tests, WTConvNeXt-T bf16 from
# JPEGs (nvjpeg) against synthetic data, the model bench.
set -uo pipefail
source dev/run-lib.sh
el built
jpeg_folder /tmp/jf8 320 14
gpu_tests
grep -A4 "Failure" $OUT/gpu.log $OUT/ops.log | head -20
el tests
wait $MK; tail -1 /tmp/mk-jf8.log
stage() { grep -E "GPU data stage" $OUT/train-$1.log | tail -1 | cut -c1-200; }
eval train3 jpeg_nvjpeg --workers 14 --dataset image_folder --data-dir /tmp/jf8 --val-split validation --decode nvjpeg; stage jpeg_nvjpeg
eval train3 synth_gpu --workers 14 --dataset synthetic --synthetic-size 12800 --gpu-augment true; stage synth_gpu
el train
timeout 60 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 6 --warmup 2 2>&1 | grep -A3 "^model  " | cut -c1-150
el done
