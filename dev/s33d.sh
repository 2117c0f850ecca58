#!/usr/bin/env bash
# Dev use (device tool): the GPU tests that cover staged_buffers (two staging buffers where they
# fit, else one): the fused WTConv and depthwise harness cases (new: W = 72 WTConv cases and a
# 96-wide 7x7 case, whose f32 rows fit one buffer only), the depthwise and WTConv GPU tests, then
# the rest of test_gpu if time is left. Pack: KEEP_NEW=0 dev/labbin-pack.sh. Carry
# ["build/labpack", ".golden"].
NAME=s33d
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 100 $L/test_ops --gtest_filter='*GpuDepthwise*:*WTConvGpu*:Gpu/OpDevice.MatchesCpu/wtconv2d*:Gpu/OpDevice.MatchesCpu/conv2d_dw*' \
  > $R/ops.log 2>&1
echo "test_ops rc $?"; el ops; ok $R/ops.log; grep -A6 "Failure" $R/ops.log | head -30
timeout 60 $L/test_gpu > $R/gpu.log 2>&1
echo "test_gpu rc $?"; el gpu; ok $R/gpu.log; grep -A6 "Failure" $R/gpu.log | head -20
