#!/usr/bin/env bash
# Dev use (device tool): thirty-second session, one call. Three programs: hg_base (77de655),
# hg_new (dev/s30/'s two f32 patches: the first half of dev/s31c.sh, which no device ran) and
# hg_quad (hg_new + four output rows a thread in haar_conv_kernel's taps and in the staged
# synthesis, K <= 5: docs/perf-notes.md, thirty-second session); the GPU tests of hg_quad's tree
# (test_gpu, test_ops: its tree has both changes), bench-layer fp32 / bf16 and both models' fp32 /
# tf32 / bf16 with each program.
# Pack: hg_base from the clean tree, hg_new with the two dev/s30/ patches applied, then the
# quad change on top: ninja -C build haargrad tests/test_gpu tests/test_ops; cp build/haargrad
# build/labbin/hg_quad; KEEP_NEW=1 dev/labbin-pack.sh (no hg_side: four programs exceed the carry).
# Carry ["build/labpack", ".golden"].
NAME=s32a
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
{ for round in 1 2; do layer_rows bf16 hg_base hg_new hg_quad; done
  layer_rows fp32 hg_base hg_new hg_quad; } > $OUT/bench-layer.txt 2>&1
el bench-layer; cat $OUT/bench-layer.txt
{ for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_quad; done
  model_rows tf32 convnext_tiny,wtconvnext_tiny hg_base hg_new hg_quad
  model_rows fp32 convnext_tiny,wtconvnext_tiny hg_base
  model_rows fp32 wtconvnext_tiny hg_new hg_quad; } > $OUT/model.txt 2>&1
el model; grep -E "^==|_tiny.* (bf16|fp32|tf32) +128 " $OUT/model.txt | cut -c1-120
