#!/usr/bin/env bash
# Fortieth session, first call: the weight-gradient slice sums and unfolds in fewer launches
# (hg_new: the depthwise weight gradient's weights and bias reduced in one launch, the split
# WTConv levels' Haar weight-gradient slices in one launch after the last split level, the base's
# and the split levels' unfolds in one launch) against e6efdc4 (hg_base): the GPU tests of the
# tree, bench-layer bf16 in both orders and fp32 once, Nsight's launch sequences at C = 96 and 192,
# both models' bf16 step twice. Pack: hg_base built here (e6efdc4), KEEP_NEW=0
# dev/labbin-pack.sh; carry ["build/labpack", ".golden"] (a third program does not fit the carry).
NAME=s40a
source dev/labbin-lib.sh
tests_first
{ layer_rows bf16 hg_base hg_new; layer_rows bf16 hg_new hg_base; layer_rows fp32 hg_base hg_new; } \
  > $OUT/bench-layer.txt 2>&1
el bench-layer
grep -E "^==|wtconv fused|ours dw 7" $OUT/bench-layer.txt
seq_each 96 hg_base hg_new; seq_each 192 hg_new
tail -2 $OUT/seq-96-hg_base.txt; cat $OUT/seq-96-hg_new.txt | cut -c1-110; tail -2 $OUT/seq-192-hg_new.txt
el seq
for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_new; done \
  > $OUT/model.txt 2>&1
el model
grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
el done
