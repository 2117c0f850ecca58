#!/usr/bin/env bash
# Dev use (device tool), twenty-eighth session: the submitted commit (haar_wgrad_kernel's slices as
# one wave) on a GPU: its GPU tests and both models in bf16 twice.
# Pack: KEEP_NEW=0 dev/labbin-pack.sh (hg_new alone). Carry ["build/labpack", ".golden"].
NAME=s28f
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
grep -h "workspace peak" $R/ops.log
for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny hg_new; done 2>&1 |
  grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " | cut -c1-120
layer_rows bf16 hg_new | grep -E "^==|wtconv fused"
el done
