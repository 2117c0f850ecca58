#!/usr/bin/env bash
# Dev use (device tool): compute-sanitizer memcheck on the session's new kernels: add_scaled_rows
# and the vectorized scale_rows (the drop-path harness cases), gelu_linear_scaled, the losses'
# bf16 cases; the chunk-table sum of squares and AdamW with the fused clip (GpuOptimizer,
# GpuReduce). Pack: KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s34d
source dev/labbin-lib.sh
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
F='Gpu/OpDevice.MatchesCpu/add_scaled*:Gpu/OpDevice.MatchesCpu/scale_samples*'
F+=':Gpu/OpDevice.MatchesCpu/drop_path*:Gpu/OpDevice.MatchesCpu/gelu_linear_scaled*'
F+=':Gpu/OpDevice.MatchesCpu/soft_target*:Gpu/OpDevice.MatchesCpu/cross_entropy*'
timeout 150 "$SAN" --tool memcheck --error-exitcode 3 $L/test_ops --gtest_filter="$F" > $R/a.log 2>&1
echo "test_ops memcheck rc $?"; grep -E "PASSED|FAILED|ERROR SUMMARY" $R/a.log | head -4
timeout 200 "$SAN" --tool memcheck --error-exitcode 3 $L/test_gpu \
  --gtest_filter='GpuOptimizer.*:GpuReduce.*' > $R/b.log 2>&1
echo "test_gpu memcheck rc $?"; grep -E "PASSED|FAILED|ERROR SUMMARY" $R/b.log | head -4
el memcheck
