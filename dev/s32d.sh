#!/usr/bin/env bash
# Dev use (device tool): thirty-second session, last call. hg_new = the submitted tree's
# synthesis change (the staged synthesis in f32 too, two buffers: dev/s32c.sh's hg_f2); hg_w2 =
# that + the f32 depthwise weight gradient (wgrad_staged_kernel: the 7x7's and the WTConv base
# path's) with two staging buffers too, where it kept one (kernels/cuda/depthwise_conv.cu,
# wgrad_staged_buffers). GPU tests of hg_w2's tree (it holds both changes), bench-layer fp32 and
# both models in fp32 and tf32 with each (bf16 is the same code in both).
# Pack: labbin = hg_new, hg_w2, tests from the hg_w2 tree; KEEP_NEW=1 dev/labbin-pack.sh.
# Carry ["build/labpack", ".golden"].
NAME=s32d
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
layer_rows fp32 hg_new hg_w2 > $OUT/bench-layer.txt 2>&1
el bench-layer; cat $OUT/bench-layer.txt
for p in fp32 tf32; do model_rows $p convnext_tiny,wtconvnext_tiny hg_new hg_w2; done \
  > $OUT/model.txt 2>&1
el model; grep -E "^==|_tiny.* (bf16|fp32|tf32) +128 " $OUT/model.txt | cut -c1-120
