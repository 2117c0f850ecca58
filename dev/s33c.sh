#!/usr/bin/env bash
# Dev use (device tool): compute-sanitizer on the landed kernels (4a7cba1: the staged synthesis
# forming level 1 itself, two f32 staging buffers). racecheck (shared-memory hazards: the
# double-buffered cp.async staging) on the split-path op harness cases, whose odd shapes take the
# new path (37 x 41 L 4 and 35 x 34 L 3 with a tail, 37 x 35 L 2 without), then memcheck on every
# fused WTConv device case of the op harness and the WTConvGpu tests (scripts/gpu-check.sh's
# memcheck filter leaves the harness's cases out). Pack: KEEP_NEW=0 dev/labbin-pack.sh on the
# landed tree (test_ops holds the cases). Carry ["build/labpack", ".golden"].
NAME=s33c
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
SPLIT='Gpu/OpDevice.MatchesCpu/wtconv2d_fused_B1_H37*:Gpu/OpDevice.MatchesCpu/wtconv2d_fused_B2_H37*'
SPLIT+=':Gpu/OpDevice.MatchesCpu/wtconv2d_fused_B1_H35*:Gpu/OpDevice.MatchesCpu/wtconv2d_fused_B2_H28*'
[ "${PART:-1}" = 1 ] && { timeout 120 "$SAN" --tool racecheck --error-exitcode 3 $L/test_ops --gtest_filter="$SPLIT" \
  > $OUT/racecheck.log 2>&1
echo "racecheck rc $?"; el racecheck; grep -E "PASSED|FAILED|ERROR SUMMARY|RACECHECK SUMMARY|hazard" $OUT/racecheck.log | head -12
timeout 200 "$SAN" --tool memcheck --error-exitcode 3 $L/test_ops \
  --gtest_filter='Gpu/OpDevice.MatchesCpu/wtconv2d_fused*' > $OUT/memcheck.log 2>&1
echo "memcheck rc $?"; el memcheck; grep -E "PASSED|FAILED|ERROR SUMMARY|tests ran" $OUT/memcheck.log | head -12; }
# second call (s33c2): the depthwise conv's own GPU tests and harness cases (the f32 weight gradient
# now double-buffered) and the WTConvGpu tests, racecheck then memcheck
if [ "${PART:-1}" = 2 ]; then
  F='*GpuDepthwise*:*WTConvGpu*:Gpu/OpDevice.MatchesCpu/*depthwise*'
  for tool in racecheck memcheck; do
    timeout 130 "$SAN" --tool $tool --error-exitcode 3 $L/test_ops --gtest_filter="$F" > $OUT/$tool-2.log 2>&1
    echo "$tool rc $?"; el $tool; grep -E "PASSED|FAILED|SUMMARY|tests ran" $OUT/$tool-2.log | head -6
  done
fi
