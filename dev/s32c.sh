#!/usr/bin/env bash
# Dev use (device tool): thirty-second session, third call. The staged synthesis
# (synth_staged_kernel) taken for f32 too, where f32 ran synth_v4_kernel since the fifth session
# (the staged kernel then lost in fp32: 96/56/5 1.181 -> 1.247 ms, before its pipelining and the
# staged level-0 rows of the nineteenth and twentieth sessions). hg_base = 17bd9cb (dev/s32b.sh's
# hg_new); hg_new = f32 staged with one buffer (97 KB at 56 x 56, K = 5: two blocks a
# multiprocessor); hg_f2 = two buffers (194 KB, one block, the next item's rows copied while this
# one is computed). GPU tests of hg_new's tree, bench-layer fp32 twice (bf16 once: unchanged code),
# the models in fp32 and tf32.
# Pack: labbin = hg_base, hg_new, hg_f2 (LAB_F32_BUFFERS 1 and 2 in kernels/cuda/wtconv_staged.cuh),
# tests from the one-buffer tree; KEEP_NEW=1 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s32c
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
{ for round in 1 2; do layer_rows fp32 hg_base hg_new hg_f2; done
  layer_rows bf16 hg_base hg_new; } > $OUT/bench-layer.txt 2>&1
el bench-layer; cat $OUT/bench-layer.txt
{ model_rows fp32 convnext_tiny,wtconvnext_tiny hg_base
  model_rows fp32 wtconvnext_tiny hg_new hg_f2
  model_rows tf32 convnext_tiny,wtconvnext_tiny hg_base hg_new hg_f2; } > $OUT/model.txt 2>&1
el model; grep -E "^==|_tiny.* (bf16|fp32|tf32) +128 " $OUT/model.txt | cut -c1-120
# Then the final figures of hg_base (17bd9cb, the tree before this change; bf16 code identical to
# hg_new's) with timm's peer bench, in the same call: the device budget allowed one call more.
mkdir -p $OUT/ab && mv $OUT/bench-layer.txt $OUT/model.txt $OUT/ab/
final_call hg_base; el final
