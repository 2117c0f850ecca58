#!/usr/bin/env bash
# Dev use (device tool), fourteenth session's second final call (dev/s14c.sh after its fixes: the
# nvjpeg graph test reads log.txt; "waited for data" is the GPU's idle time), on the submitted
# code: the GPU tests;
# WTConvNeXt-T bf16 3 epochs (100 steps) from JPEGs, graphed with 32 hardware queues, against
# synthetic data through the same GPU transform (issue 13's ratio), with the new "waited for data";
# the loader alone per decode backend beside torchvision + PIL (same workers); the model bench in
# bf16.
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
grep -H "training step:\|JPEG decoder thread" $OUT/train-*.log | sed -E 's/^[^:]*train-//' | cut -c1-200
el trained
data_bench /tmp/jf8
el data
timeout 70 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 --output $OUT/bench.json > $OUT/bench.txt 2>&1; grep -A30 "^model  " $OUT/bench.txt | cut -c1-170 | grep -v "^$\|^timed\|^syncs\|replayed" | head -12
el bench
el done
