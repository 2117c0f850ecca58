#!/usr/bin/env bash
# Dev use (device tool): issue 11's per-op breakdown with the roofline columns, ConvNeXt-T and
# WTConvNeXt-T in bf16 (B = 128, 224 px), of the thirty-fifth session's program.
# Pack: KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s35b
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
for m in convnext_tiny wtconvnext_tiny; do
  timeout 200 $L/hg_new bench --device cuda --batch 128 --img-size 224 --precision bf16 \
    --models $m --wtconv fused --steps 10 --warmup 3 --breakdown > $OUT/breakdown-$m.txt 2>&1
  el "breakdown $m"
  sed -n '/^model  /,$p' $OUT/breakdown-$m.txt | cut -c1-200 | head -60
done
