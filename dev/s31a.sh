#!/usr/bin/env bash
# Dev use (device tool), thirty-first session: one call's A/B of three programs. hg_base =
# 594d529 (the thirtieth session's commit); hg_new = the side branches (kernels/side_branch.h:
# the depthwise conv's weight and bias gradients and the split WTConv's base-path gradients on a
# second stream beside the input gradient); hg_new2 = hg_new with the split levels' weight
# gradients beside their level gradients too (and the base path's beside the synthesis only);
# (a fourth program, 594d529 with dev/s30/'s f32 patches, did not fit the 64 MiB the device tool
# carries: dev/s31c.sh). The GPU tests are hg_new2's tree's. Then bench-layer (bf16 twice, fp32
# once) and the models (bf16 twice, tf32 once; fp32 for hg_base and hg_new2) with each program.
# Both changes are in dev/s31/side-branches.patch (hg_new2's tree against 594d529; hg_new is that
# without the wtconv_split.cu part and with base_grads queued first in fused_backward_t).
# Pack: cp build/haargrad build/labbin/hg_base at the base; build each change, cp build/haargrad
# build/labbin/hg_new (hg_new2) in turn; KEEP_NEW=1 dev/labbin-pack.sh.
# Carry ["build/labpack", ".golden"].
NAME=s31a
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
V="hg_base hg_new hg_new2"
gpu_tests; el tests; cat $OUT/tests.txt
timeout 60 $L/test_gpu --gtest_filter='SideBranch*' 2>&1 | grep -E "^\[ +(OK|FAILED|PASSED)" | head
{ for round in 1 2; do layer_rows bf16 $V; done; layer_rows fp32 $V; } > $OUT/bench-layer.txt 2>&1
el bench-layer; cat $OUT/bench-layer.txt
{ model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_new hg_new2
  model_rows tf32 convnext_tiny,wtconvnext_tiny $V
  model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_new hg_new2
  model_rows fp32 convnext_tiny,wtconvnext_tiny hg_base hg_new2; } > $OUT/model.txt 2>&1
el model; grep -E "^==|_tiny.* (bf16|fp32|tf32) +128 " $OUT/model.txt | cut -c1-120
