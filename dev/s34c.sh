#!/usr/bin/env bash
# Dev use (device tool): the session's final figures of the submitted tree's program (hg_new):
# bench-layer bf16 / fp32, both models in bf16, fp32, tf32, bf16 by name, timm's peer bench, all
# in one call (final_call), then the 224 px configs' own step (drop path 0.1) in bf16.
# Pack: KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s34c
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
final_call hg_new
config_rows hg_new
el cfg
