#!/usr/bin/env bash
# Dev use (device tool): prepared in the thirty-second session (not run). hg_base = the submitted
# tree; hg_new = dev/s32/levels-in-synthesis.patch: where a layer has exactly one split level
# after level 0 (96/56/5: level 1 split, levels 2-4 the tail), the staged synthesis stages its rows
# of t_1 and of the tail's term instead of R and forms R's value itself, as levels_synth_kernel
# does (the same operations: values bit for bit), so that launch and R's f32 write and read go
# (predicted: ~-13 us each direction at 96/56/5, B = 64; WTConvNeXt-T bf16 ~-0.4%). GPU tests of
# hg_new's tree first (the patch has only been compiled), then bench-layer bf16 twice and fp32, the
# 96/56/5 launch sequences, and both models in bf16 twice.
# Pack: build the clean tree, cp build/haargrad build/labbin/hg_base; git apply
# dev/s32/levels-in-synthesis.patch; ninja -C build haargrad tests/test_gpu tests/test_ops;
# KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s32e
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
{ for round in 1 2; do layer_rows bf16 hg_base hg_new; done; layer_rows fp32 hg_base hg_new; } \
  > $OUT/bench-layer.txt 2>&1
el bench-layer; cat $OUT/bench-layer.txt
seq_each 96 hg_base hg_new; el seq
for v in hg_base hg_new; do echo "== $v"; grep -E "synth|haar|plane" $OUT/seq-96-$v.txt | head -14; done
{ for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_new; done; } \
  > $OUT/model.txt 2>&1
el model; grep -E "^==|_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
