#!/usr/bin/env bash
# Dev use (device tool), fourteenth session: the product with 32 hardware queues
# (core/cuda_queues.h, set by the program) and the trainer's step graphed with decode: nvjpeg.
# GPU tests; WTConvNeXt-T bf16 3 epochs (100 steps) from JPEGs graphed, against synthetic data
# graphed through the same GPU transform, and from JPEGs with the driver's default 8 queues (the
# user's value is kept: the A/B); the loader alone per decode backend beside torchvision + PIL;
# the model bench in bf16.
set -uo pipefail
source dev/run-lib.sh
jpeg_folder /tmp/jf8 320 14
el built
test_gpu_only
el tests
folder_ready /tmp/jf8
J="--workers 14 --dataset image_folder --data-dir /tmp/jf8 --val-split validation --decode nvjpeg"
eval train3 synth_gpu --workers 14 --dataset synthetic --synthetic-size 12800 --gpu-augment true
eval train3 nv_graph $J
CUDA_DEVICE_MAX_CONNECTIONS=8 eval train3 nv_graph_q8 $J
grep -H "training step:\|JPEG decoder thread\|GPU data stage" $OUT/train-*.log | sed -E 's/^[^:]*train-//' | cut -c1-200
el trained
data_bench /tmp/jf8
el data
timeout $(( $(left) > 70 ? 70 : $(left) )) $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 --output $OUT/bench.json > $OUT/bench.txt 2>&1; grep -A30 "^model  " $OUT/bench.txt | cut -c1-170 | grep -v "^$\|^timed\|^syncs\|replayed" | head -12
el done
