#!/usr/bin/env bash
# Dev use (device tool), twentieth session's last call, prebuilt binaries of the head (65ca4fa's
# kernels; dev/labbin-pack.sh): test_gpu and the op harness's GPU cases, then compute-sanitizer
# memcheck on the op harness's WTConv and depthwise GPU tests (the kernels this session changed:
# the fold, the plane copies, the unfolds, the staging walks), as scripts/gpu-check.sh runs it.
NAME=s20j
source dev/labbin-lib.sh
gpu_tests; el tests; cat $OUT/tests.txt
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 150 "$SAN" --tool memcheck --error-exitcode 3 $L/test_ops \
  --gtest_filter='*WTConvGpu*:*GpuDepthwise*' > $OUT/memcheck.log 2>&1
echo "memcheck exit $?"; tail -4 $OUT/memcheck.log; el memcheck
