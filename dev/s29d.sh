#!/usr/bin/env bash
# Dev use (device tool), twenty-ninth session: f32 takes haar_conv_kernel and haar_wgrad_kernel
# where two blocks fit a multiprocessor, and the f32 level gradient runs as bf16's does (forward
# conv, flipped filters) (hg_new; dev/s29/f32-haar-kernels.patch) against f02de4e (hg_base): GPU
# tests, bench-layer fp32 twice and bf16 once, both models in fp32 and tf32.
# Pack: cp the baseline's build/haargrad to build/labbin/hg_base, build, dev/labbin-pack.sh.
# Carry ["build/labpack", ".golden"].
NAME=s29d
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests
{ for round in 1 2; do layer_rows fp32 hg_base hg_new; done; layer_rows bf16 hg_base hg_new; } \
  > $OUT/bench-layer.txt 2>&1
el bench-layer
for p in fp32 tf32; do model_rows $p convnext_tiny,wtconvnext_tiny hg_base hg_new; done \
  > $OUT/model.txt 2>&1
el model
cat $OUT/tests.txt $OUT/bench-layer.txt
grep -E "^==|^(conv|wtconv)next_tiny.* (fp32|tf32) +128 " $OUT/model.txt | cut -c1-120
