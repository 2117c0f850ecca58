#!/usr/bin/env bash
# Fortieth session, second call: dev/s40a.sh's change with the split levels' weight-gradient
# slices in grad_x's spare memory (s40a: +2.7 MiB extra at 96/56/5, the level-0 slices kept until
# the levels' one reduction), plus the depthwise conv layer's weight and bias gradients in one pass
# (kernels::cuda::conv2d_backward_weight_bias: the bias sums of our weight-gradient kernel instead
# of bias_grad_rows' two launches, ConvNeXt's 7x7 and bench-layer's "ours dw" rows), against
# e6efdc4 (hg_base): the GPU tests of the tree, bench-layer bf16 in both orders and fp32 once,
# Nsight's launch sequence at C = 96, both models' bf16 step twice. Pack: hg_base built here
# (e6efdc4), KEEP_NEW=0 dev/labbin-pack.sh; carry ["build/labpack", ".golden"].
NAME=s40b
source dev/labbin-lib.sh
tests_first
{ layer_rows bf16 hg_base hg_new; layer_rows bf16 hg_new hg_base; layer_rows fp32 hg_base hg_new; } \
  > $OUT/bench-layer.txt 2>&1
el bench-layer
grep -E "^==|wtconv fused|ours dw 7" $OUT/bench-layer.txt
seq_each 96 hg_new
grep -E "wtconv_detail|reduce_slices|wgrad_staged|sum_rows|column_sum|conv_staged" $OUT/seq-96-hg_new.txt | sed -n 1,40p | cut -c1-100
el seq
for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_new; done \
  > $OUT/model.txt 2>&1
el model
grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
el done
