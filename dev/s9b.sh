#!/usr/bin/env bash
# Dev use (device tool), ninth session: the training step as one CUDA graph (train/step_graph.h).
# GPU tests (StepGraph ones first), then the model bench with and without the graph in one call.
set -uo pipefail
source dev/run-lib.sh
el built
timeout 60 /tmp/b/tests/test_gpu --gtest_filter='*StepGraph*:*GpuOptimizer*:*GpuMemory*' > $OUT/graph.log 2>&1; ok $OUT/graph.log
grep -B2 -A8 "Failure\|what()\|error" $OUT/graph.log | head -40
el graph-tests
B="$HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3"
timeout 80 $B > $OUT/bench-graph.log 2>&1; grep -E -A3 "^model  " $OUT/bench-graph.log | cut -c1-150; grep -E "CUDA graph|error|rror" $OUT/bench-graph.log | head; grep -E -A5 "^model .*phase" $OUT/bench-graph.log | cut -c1-160
el bench-graph
timeout 80 $B --cuda-graph false > $OUT/bench-eager.log 2>&1; grep -E -A3 "^model  " $OUT/bench-eager.log | cut -c1-150
el bench-eager
gpu_tests
el done
