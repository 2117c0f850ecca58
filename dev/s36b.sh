#!/usr/bin/env bash
# Thirty-sixth session: LayerNorm's vector kernels with several short rows a warp and 16-byte bf16
# units (kernels/cuda/layernorm.cu). The tree's GPU tests, the op harness's perf rows of
# layer_norm (bf16, f32), then both models' bf16 step with hg_base (before) and hg_new, twice each,
# and ConvNeXt-T's per-op breakdown (bf16) of both.
# Pack: cp the old haargrad to build/labbin/hg_base, build, KEEP_NEW=0 dev/labbin-pack.sh.
# Carry ["build/labpack", ".golden"].
NAME=s36b
source dev/labbin-lib.sh
tests_first
for round in 1 2; do
  for v in test_ops; do
    echo "== $v round $round"
    timeout 120 $L/$v --perf --dtype bf16,f32 --filter layer_norm_convnext 2>&1 | grep -v "^$"
  done
done 2>&1 | tee $OUT/perf.txt
el perf
for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_new; done \
  > $OUT/model.txt 2>&1
grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-150
el model
for v in hg_base hg_new; do
  echo "== breakdown $v"
  timeout 120 $L/$v bench --device cuda --batch 128 --img-size 224 --precision bf16 \
    --models convnext_tiny --steps 10 --warmup 3 --breakdown 2>&1 | grep -iE "norm|step|sum" | head -8
done 2>&1 | tee $OUT/breakdown.txt
el breakdown
