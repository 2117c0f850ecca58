#!/usr/bin/env bash
# Thirty-ninth session, the last call: the submitted tree's final figures beside timm (final_call:
# bench-layer bf16 / fp32 with the I/O model, both models in bf16, fp32, tf32, bf16, timm's peer
# bench in the same call). Its kernels are 5e769f1's; its GPU tests ran in dev/s39c.sh (the same
# host code, with the backed-out plane patch). Pack: KEEP_NEW=0 dev/labbin-pack.sh; carry
# ["build/labpack"].
NAME=s39d
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
final_call hg_new
