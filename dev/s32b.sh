#!/usr/bin/env bash
# Dev use (device tool): thirty-second session, second call. hg_base (77de655) against hg_new:
# dev/s30/'s two f32 patches with the staged-x path of the whole-plane backward kept as the base's
# code (`dev/s32a.sh` measured the patches as they were: fp32 / tf32 faster, but the bf16 layer
# 2-3% slower at 14 x 14 and 7 x 7, where the patch had rewritten the pyramid and the weight-gradient
# loop that bf16 also runs); the GPU tests of hg_new's tree, bench-layer, both models in bf16 (two
# rounds), tf32 and fp32. Then the launch sequences (Nsight Compute, bf16, C = 96) of hg_base and
# hg_quad (dev/s32/rows-a-thread.patch, which dev/s32a.sh measured slower) to tell its two kernels'
# shares apart.
# Pack: as dev/s32a.sh, hg_new rebuilt from the tree with the reworked patches
# (KEEP_NEW=0 dev/labbin-pack.sh); hg_quad kept from dev/s32a.sh's pack.
# Carry ["build/labpack", ".golden"].
NAME=s32b
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
{ for round in 1 2; do layer_rows bf16 hg_base hg_new; done
  layer_rows fp32 hg_base hg_new; } > $OUT/bench-layer.txt 2>&1
el bench-layer; cat $OUT/bench-layer.txt
{ for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_new; done
  model_rows tf32 convnext_tiny,wtconvnext_tiny hg_base hg_new
  model_rows fp32 convnext_tiny,wtconvnext_tiny hg_base hg_new; } > $OUT/model.txt 2>&1
el model; grep -E "^==|_tiny.* (bf16|fp32|tf32) +128 " $OUT/model.txt | cut -c1-120
seq_each 96 hg_base hg_quad; el seq
for v in hg_base hg_quad; do echo "== $v"; cat $OUT/seq-96-$v.txt; done
