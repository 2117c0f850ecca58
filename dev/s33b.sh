#!/usr/bin/env bash
# Dev use (device tool): is the f32 depthwise weight gradient better with one staging buffer, as
# before 4a7cba1? dev/s33a.sh measured the landed tree (hg_new: two buffers in f32 for the
# synthesis and the weight gradient) against 949f1fb with our 7x7 fp32 ~1% slower (96/56 0.446 ->
# 0.452 ms, 192/28 0.222 -> 0.226) and ConvNeXt-T tf32 36.52 -> 36.61 ms, one sample each.
# hg_w1 = hg_new with wgrad_staged_kernel back at one f32 buffer (sizeof(T) == 2 ? 2 : 1 in
# depthwise_conv.cu, both the kernel's NB and wgrad_staged_smem). bench-layer fp32 three rounds
# and both models in tf32 and fp32 three rounds, alternating.
# Pack: cp build/haargrad (4a7cba1 or later) build/labbin/hg_new; edit the two places; ninja -C
# build haargrad; cp build/haargrad build/labbin/hg_w1; KEEP_NEW=1 dev/labbin-pack.sh. Carry
# ["build/labpack", ".golden"].
NAME=s33b
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
{ for round in 1 2 3; do layer_rows fp32 hg_new hg_w1; done; } > $OUT/bench-layer.txt 2>&1
el bench-layer; cat $OUT/bench-layer.txt
{ for round in 1 2 3; do for p in tf32 fp32; do
    model_rows $p convnext_tiny,wtconvnext_tiny hg_new hg_w1; done; done; } > $OUT/model.txt 2>&1
el model; grep -E "^==|_tiny.* (fp32|tf32) +128 " $OUT/model.txt | cut -c1-120
