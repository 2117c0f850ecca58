#!/usr/bin/env bash
# Dev use (device tool): prepared in the thirty-second session for the next device call (not run:
# the session's device time was spent). hg_base = the submitted tree (the staged synthesis in f32
# with one buffer); hg_new = dev/s32/synth-f32-two-buffers.patch (two buffers and no register cap
# in f32: dev/s32c.sh measured it 4% faster on the layer, the same on the models, but its build's
# GPU tests never ran); hg_w2 = that + dev/s32/wgrad-f32-two-buffers.patch (the f32 depthwise
# weight gradient, the 7x7's and the WTConv base path's, with two staging buffers too). GPU tests
# of hg_w2's tree (it holds both patches), bench-layer fp32 and both models in fp32 and tf32 with
# each (bf16 is the same code in all three).
# Pack: build the clean tree, cp build/haargrad build/labbin/hg_base; git apply
# dev/s32/synth-f32-two-buffers.patch; ninja -C build haargrad; cp build/haargrad
# build/labbin/hg_new; git apply dev/s32/wgrad-f32-two-buffers.patch; ninja -C build haargrad
# tests/test_gpu tests/test_ops; cp build/haargrad build/labbin/hg_w2; KEEP_NEW=1
# dev/labbin-pack.sh (no other hg_* in build/labbin). Carry ["build/labpack", ".golden"].
NAME=s32d
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
{ for round in 1 2; do layer_rows fp32 hg_base hg_new hg_w2; done; } > $OUT/bench-layer.txt 2>&1
el bench-layer; cat $OUT/bench-layer.txt
for p in fp32 tf32; do model_rows $p convnext_tiny,wtconvnext_tiny hg_base hg_new hg_w2; done \
  > $OUT/model.txt 2>&1
el model; grep -E "^==|_tiny.* (bf16|fp32|tf32) +128 " $OUT/model.txt | cut -c1-120
