#!/usr/bin/env bash
# Dev use (device tool), twentieth session's first call, prebuilt binaries (carry ["build/labpack",
# ".golden"], packed by dev/labbin-pack.sh): hg_new = commit e390270 (the review commit 172cd76's
# kernels, never run on a GPU before). GPU tests, bench-layer bf16 (with the I/O model) and fp32,
# both models' bf16 bench, Nsight's launch sequence at 96/56/5 bf16 and the stall reasons of the
# Haar + conv, tail and level-synthesis kernels.
NAME=s20a
source dev/labbin-lib.sh
gpu_tests; el tests; cat $OUT/tests.txt
{ IO=1 layer_rows bf16 hg_new; layer_rows fp32 hg_new; } | tee $OUT/bench-layer.txt
el bench-layer
model_rows bf16 convnext_tiny,wtconvnext_tiny hg_new | tee $OUT/model.txt
el model
ncu_seq hg_new; el seq
ncu_stalls hg_new "haar_conv|levels_synth|plane_" 12 > $OUT/stalls.txt 2>&1; el stalls
cat $OUT/stalls.txt
