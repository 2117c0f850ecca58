#!/usr/bin/env bash
# Forty-first session, second call: dev/s41a.sh found the tensor-core kernels correct (K = 3, 5, 7;
# the weight gradient's K = 9 unwritten: the mma's 8 columns hold K <= 8 taps, now refused) and
# ~100 us whatever K (the staging's one item in flight per thread). Here: the staging batched (4
# items' loads before their stores), the GPU tests, bench-layer bf16 against hg_base (4a4d1ec's
# kernels), the depthwise kernels' times in hg_new's launch sequence and Nsight's stall reasons
# for them, the models in bf16. To run it: apply dev/s41/tensor-core-depthwise.patch, build, keep
# the tree's haargrad before the patch as build/labbin/hg_base.
# Pack: KEEP_NEW=0 dev/labbin-pack.sh with build/labbin/hg_base; carry ["build/labpack", ".golden"].
NAME=s41b
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
layer_rows bf16 hg_new hg_base > $OUT/bench-layer.txt 2>&1; el bench-layer
cat $OUT/bench-layer.txt
seq_each 96 hg_new; el seq
grep -E "mma|staged_kernel<__nv" $OUT/seq-96-hg_new.txt | tail -14
# where the tensor-core kernels wait (issue stalls, occupancy): the first two launches of each
ncu_stalls hg_new "conv_mma_kernel" 2 > $OUT/stalls-conv.txt; cat $OUT/stalls-conv.txt
ncu_stalls hg_new "wgrad_mma_kernel" 2 > $OUT/stalls-wgrad.txt; cat $OUT/stalls-wgrad.txt
el stalls
gpu_tests; el tests; cat $OUT/tests.txt
model_rows bf16 convnext_tiny,wtconvnext_tiny hg_new hg_base > $OUT/model.txt 2>&1
el model
grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
