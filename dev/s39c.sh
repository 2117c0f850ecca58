#!/usr/bin/env bash
# Thirty-ninth session: dev/s39b.sh's group sums with one release a block (thread 0's count after
# the barrier) and an acquire in the last block only, instead of a __threadfence() by every
# thread (MEMBAR.SC.GPU + an L1 invalidation in every block: the plane kernel 108 -> 139 us in
# s39b), against 5e769f1 (hg_base): the GPU tests of the tree (with the session's host changes),
# bench-layer bf16 in both orders, the new program's Nsight per-kernel times at C = 384 and 768,
# both models' bf16 step once. Pack as s39b; carry ["build/labpack", ".golden"].
NAME=s39c
source dev/labbin-lib.sh
tests_first
{ layer_rows bf16 hg_base hg_new; layer_rows bf16 hg_new hg_base; } > $OUT/bench-layer.txt 2>&1
el bench-layer
grep -E "^==|wtconv fused" $OUT/bench-layer.txt
seq_each 384 hg_new; seq_each 768 hg_new
grep -E "plane_" $OUT/seq-384-hg_new.txt | head -4; grep -E "plane_" $OUT/seq-768-hg_new.txt | head -4
el seq
model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_new > $OUT/model.txt 2>&1
el model
grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
