#!/usr/bin/env bash
# Thirty-ninth session: the window-remainder patch (dev/s38/window-remainder.patch, applied to
# 5e769f1) against 5e769f1 (hg_base), measured longer than s38d did: bench-layer bf16 in three
# rounds and fp32 in two, each round in both orders (base first, then new first), Nsight's
# per-kernel times of one bench-layer bf16 step at C = 96 and 192 for both programs, then both
# models' bf16 step twice. Its GPU tests passed in s38d (the same patch). Pack: cp build/haargrad
# build/labbin/hg_base before building the change, then KEEP_NEW=0 dev/labbin-pack.sh. Carry
# ["build/labpack", ".golden"].
NAME=s39a
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
{ for round in 1 2 3; do layer_rows bf16 hg_base hg_new; layer_rows bf16 hg_new hg_base; done
  for round in 1 2; do layer_rows fp32 hg_base hg_new; layer_rows fp32 hg_new hg_base; done
} > $OUT/bench-layer.txt 2>&1
el bench-layer
seq_each 96 hg_base hg_new; seq_each 192 hg_base hg_new
el seq
for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_new; done \
  > $OUT/model.txt 2>&1
el model
grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
