#!/usr/bin/env bash
# Dev use (device tool), written in the thirtieth session (no device was lent then) and run first
# in the thirty-first (H200: every test passed; README's table): the submitted tree's
# GPU tests (the reference order's saved intermediates and its convolutions on the product's
# depthwise kernels never ran on a GPU), bench-layer's rows of both WTConv modes (extra memory:
# the reference row now keeps kernels::WTConvSaved between its forward and backward), WTConvNeXt-T
# fused and unfused at B = 128 in fp32 (peak memory against docs/anchors.md's PyTorch reference
# and official fused), then the session's final figures beside timm (final_call).
# Pack: KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s30b
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
grep -E "rel error|workspace peak" $R/ops.log | grep -iE "reference|peak" | head -20
for p in bf16 fp32; do
  timeout 60 $L/hg_new bench-layer --kernel 5 --precision $p > $OUT/bl-$p.txt 2>&1
  grep -E "^(wtconv|ours dw 7)" $OUT/bl-$p.txt
done
el bench-layer
timeout 120 $L/hg_new bench --device cuda --batch 128 --img-size 224 --precision fp32 \
  --models wtconvnext_tiny --wtconv fused,unfused --steps 10 --warmup 3 > $OUT/unfused.txt 2>&1
grep -A8 "^model  " $OUT/unfused.txt | cut -c1-170
el unfused
final_call hg_new; el final
