#!/usr/bin/env bash
# Dev use (device tool), seventeenth session's review check: the GPU tests and one bf16 bench-layer
# of the review commit's tree (prebuilt, carry ["build/labpack", ".golden"]).
set -uo pipefail
tar -C /tmp -xJf build/labpack/labbin.tar.xz
export LD_LIBRARY_PATH=/tmp/labbin:/usr/local/cuda/lib64:/usr/local/cuda/lib
export HAARGRAD_GOLDEN_DIR=$PWD/.golden
L=/tmp/labbin
timeout 70 $L/test_gpu > /tmp/gpu.log 2>&1
timeout 90 $L/test_ops --gtest_filter='*Gpu*:*Cuda*' > /tmp/ops.log 2>&1
timeout 25 $L/hg_new bench-layer --kernel 5 --precision bf16 2>&1 | grep -E "^(wtconv fused|ours dw 7)"
for f in /tmp/gpu.log /tmp/ops.log; do grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $f | head -6; done
grep -A4 "Failure" /tmp/gpu.log /tmp/ops.log | head -20
