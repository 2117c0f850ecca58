#!/usr/bin/env bash
# Dev use (device tool), twenty-first session's fourth call, prebuilt binaries (dev/labbin-pack.sh):
#   hg_base     commit af4b10a's program;
#   hg_new      the tree: the whole-plane backward's weight-gradient sums by filter-row pairs
#               (each loaded G value serves two filter rows), unrolled by K (dev/s21c.sh ran it
#               together with dev/s21/plane-cascade-row-pairs.patch, 33% slower, backed out);
#   hg_split14  hg_new with whole layers on the plane kernels only up to 64 pixels (a lab build:
#               plane_takes refuses a whole layer above 8 x 8), so that 14 x 14 layers run the
#               split path (Haar + conv, the 7 x 7 tail on the plane kernels, the synthesis).
# GPU tests of the tree, bench-layer bf16 twice and fp32 once, both models' bf16 twice, the
# launch sequences at C = 384 of hg_new and hg_split14.
NAME=s21d
source dev/labbin-lib.sh
gpu_tests; el tests
{ for round in 1 2; do layer_rows bf16 hg_base hg_new hg_split14; done
  layer_rows fp32 hg_base hg_new hg_split14; } > $OUT/bench-layer.txt 2>&1
el bench-layer
for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_new hg_split14; done \
  > $OUT/model.txt 2>&1
el model
seq_each 384 hg_new hg_split14  # (dev/labbin-lib.sh's, written after the call: the same commands)
ab_summary
for v in hg_new hg_split14; do echo "== $v 384"; sed -n 1,60p $OUT/seq-384-$v.txt | grep -vE "fill|copy" | head -24; done
el done
