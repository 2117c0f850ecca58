#!/usr/bin/env bash
# Dev use (device tool), sixth session: WTConv bf16 intermediates (GPU tests, bench, bench-layer),
# Fashion-MNIST in bf16 (issue 10), and WTConvNeXt-T bf16 from JPEGs (nvjpeg, nvJPEG's allocators
# cached) against synthetic data with the GPU transform, 100 steps an epoch.
set -uo pipefail
source dev/run-lib.sh
el built
JF=/tmp/jf7
jpeg_folder $JF 320 6
gpu_tests
el tests
timeout 120 $HG bench --device cuda --batch 128 --img-size 224 --precision fp32,tf32,bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 6 --warmup 2 --output $OUT/bench.json > $OUT/bench.txt 2>&1; grep -A20 "^model  " $OUT/bench.txt | cut -c1-150 | head -24
el bench
timeout 60 $HG bench configs/wtconvnext_tiny.yaml --device cuda --batch 128 --precision bf16 --steps 6 --warmup 2 2>&1 | grep -A2 "^model  " | head -3 | cut -c1-150
el bench-config
for p in bf16 fp32; do timeout 60 $HG bench-layer --kernel 5 --precision $p > $OUT/bl-$p.txt 2>&1; grep -E "^(impl|wtconv fused|wtconv ref|ours dw 7)" $OUT/bl-$p.txt | cut -c1-150; done
el bench-layer
timeout 120 $HG train configs/fashion_mnist.yaml --device cuda --precision bf16 --data-dir $PWD/.fmnist --output /tmp/runs --experiment fmnist_bf16 --workers 8 --plain > $OUT/fmnist_bf16.log 2>&1; grep -E "done:|error" $OUT/fmnist_bf16.log | tail -2 | cut -c1-200
el fmnist
wait $MK; tail -1 /tmp/mk-$(basename $JF).log
eval train3 jpeg_nvjpeg --workers 14 --dataset image_folder --data-dir $JF --val-split validation --decode nvjpeg
eval train3 synth_gpu --workers 14 --dataset synthetic --synthetic-size 12800 --gpu-augment true
el done
