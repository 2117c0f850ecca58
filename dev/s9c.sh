#!/usr/bin/env bash
# Dev use (device tool), ninth session: the training step as one CUDA graph in bench and train
# (with drop path through host_drawn). GPU tests; the model bench in three precisions; WTConvNeXt-T
# bf16 from JPEGs against synthetic data, and synthetic data without the graph.
set -uo pipefail
source dev/run-lib.sh
el built
jpeg_folder /tmp/jf8 320 14
timeout 60 /tmp/b/tests/test_gpu --gtest_filter='*StepGraph*' > $OUT/graph.log 2>&1; ok $OUT/graph.log
grep -B2 -A8 "Failure\|what()" $OUT/graph.log | head -30
gpu_tests
el tests
timeout 120 $HG bench --device cuda --batch 128 --img-size 224 --precision fp32,tf32,bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 8 --warmup 3 --output $OUT/bench.json > $OUT/bench.txt 2>&1; grep -A22 "^model  " $OUT/bench.txt | cut -c1-170 | head -32
el bench
folder_ready /tmp/jf8
jpeg_vs_synth /tmp/jf8
grep -h "training step:" $OUT/train-*.log | sort | uniq -c
eval train3 synth_eager --workers 14 --dataset synthetic --synthetic-size 12800 --gpu-augment true --cuda-graph false
el done
