#!/usr/bin/env bash
# Dev use (device tool), twenty-third session, prebuilt binaries (dev/labbin-pack.sh, then copies):
#   hg_base                        HEAD 80c9e48 (its review commit, never run on a GPU);
#   hg_rf                          80c9e48 + dev/s22/plane-register-filters.patch;
#   hg_tc2                         80c9e48 + haar_conv and the synthesis's base conv on the
#                                  tensor cores (kernels/cuda/wtconv_haar_conv_tc.cuh,
#                                  wtconv_synth_tc.cuh);
#   hg_tc3, test_gpu_tc3, test_ops_tc3  hg_tc2 + the depthwise weight gradient on the tensor
#                                  cores (kernels/cuda/depthwise_wgrad_tc.cuh).
# The GPU tests of the tc3 tree; bench-layer bf16 x2; the models' bf16. (The session's call also
# ran a lab, dev/s23/tc_dw.cu, removed since: dev/dwconv_tc/ is the same lab, done earlier.)
NAME=s23a
source dev/labbin-lib.sh
timeout 120 $L/test_gpu_tc3 > $R/gpu.log 2>&1
timeout 150 $L/test_ops_tc3 --gtest_filter='*Gpu*:*Cuda*' > $R/ops.log 2>&1
{ echo "== test_gpu_tc3"; ok $R/gpu.log; echo "== test_ops_tc3 GPU cases"; ok $R/ops.log
  grep -B2 -A8 "Failure" $R/gpu.log $R/ops.log | head -80; } > $OUT/tests.txt
grep "bf16: worst" $R/ops.log | sort -k3 -g | tail -6 >> $OUT/tests.txt
cp $R/ops.log $R/gpu.log $OUT/
el tests; cat $OUT/tests.txt
{ layer_rows bf16 hg_base hg_rf hg_tc2 hg_tc3; layer_rows bf16 hg_base hg_tc3; } \
  > $OUT/bench-layer.txt 2>&1
el bench-layer
grep -E "^==|wtconv fused|ours dw 7" $OUT/bench-layer.txt
model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_tc3 hg_tc2 > $OUT/model.txt 2>&1
el model
grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
