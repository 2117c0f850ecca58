#!/usr/bin/env bash
# Dev use (device tool): the session's final figures of the submitted tree's program (hg_new):
# bench-layer bf16 / fp32, both models in bf16, fp32, tf32, bf16 by name, timm's peer bench, all
# in one call (final_call), then the 224 px configs' own step (drop path 0.1) in bf16.
# Pack: KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s34c
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
final_call hg_new
for m in convnext_tiny wtconvnext_tiny; do
  timeout 80 $L/hg_new bench configs/$m.yaml --device cuda --precision bf16 --steps 10 --warmup 3 \
    > $R/cfg-$m.txt 2>&1
  echo "== config $m"; grep -E "^(conv|wtconv)next_tiny" $R/cfg-$m.txt | cut -c1-160
done 2>&1 | tee $OUT/cfg.txt
el cfg
