#!/usr/bin/env bash
# Thirty-ninth session: the whole-plane backward's slices summed in groups of 8 by the last block
# of each group to finish (group_sum_slices in wtconv_plane.cuh; no block waits, unlike the
# thirty-eighth session's clusters), against 5e769f1 (hg_base): GPU tests of the change, then
# bench-layer bf16 in two rounds (both orders) and fp32 in one, Nsight's per-kernel times of one
# bench-layer bf16 step at C = 384 and 768 for both programs, then both models' bf16 step twice.
# Pack: cp build/haargrad build/labbin/hg_base before building the change, then KEEP_NEW=0
# dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s39b
source dev/labbin-lib.sh
tests_first
{ for round in 1 2; do layer_rows bf16 hg_base hg_new; layer_rows bf16 hg_new hg_base; done
  layer_rows fp32 hg_base hg_new
} > $OUT/bench-layer.txt 2>&1
el bench-layer
seq_each 384 hg_base hg_new; seq_each 768 hg_base hg_new
el seq
for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_new; done \
  > $OUT/model.txt 2>&1
el model
grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
