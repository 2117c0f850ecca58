#!/usr/bin/env bash
# Dev use (device tool), ninth session: cuBLAS with a workspace of our own; the graphed trainer
# against the eager one (fp32, drop path), and the other graph / memory / data-parallel tests.
set -uo pipefail
source dev/run-lib.sh
el built
timeout 100 /tmp/b/tests/test_gpu --gtest_filter='*StepGraph*:*GpuMemory*:*DataParallelGpu*:*GpuOptimizer*:*Golden*' > $OUT/graph.log 2>&1; ok $OUT/graph.log
grep -A6 "Failure" $OUT/graph.log | head -30
el done
