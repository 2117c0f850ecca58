#!/usr/bin/env bash
# Dev use (device tool), thirty-first session: dev/s30/'s two f32 patches (applied together) as
# hg_new against hg_base = the tree without them (594d529; later HEADs until the product changes),
# in one short call: the patched tree's GPU tests, bench-layer fp32 twice and bf16 once, the models
# in tf32 and fp32 once each (the tail of dev/s30a.sh without its Nsight sequences: the session's
# device time was nearly spent).
# Pack: cp the base's build/haargrad to build/labbin/hg_base; git apply both dev/s30/ patches,
# ninja haargrad tests/test_gpu tests/test_ops, KEEP_NEW=0 dev/labbin-pack.sh.
# Carry ["build/labpack", ".golden"].
NAME=s31b
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
{ for round in 1 2; do layer_rows fp32 hg_base hg_new; done; layer_rows bf16 hg_base hg_new; } \
  > $OUT/bench-layer.txt 2>&1
el bench-layer; cat $OUT/bench-layer.txt
{ model_rows tf32 convnext_tiny,wtconvnext_tiny hg_base hg_new
  model_rows fp32 convnext_tiny,wtconvnext_tiny hg_base hg_new; } > $OUT/model.txt 2>&1
el model; grep -E "^==|_tiny.* (fp32|tf32) +128 " $OUT/model.txt | cut -c1-120
