#!/usr/bin/env bash
# Fortieth session, final call: the submitted tree's final figures (final_call; its kernels' GPU
# tests passed in dev/s40b.sh:
# bench-layer bf16 / fp32 with the I/O model, both models in bf16, fp32, tf32, bf16, timm's peer
# bench), the 224 px configs' own step, then the thirty-ninth session's diagnostic (dev/s39e.sh):
# hg_diag = e6efdc4 + dev/s39/plane-slice-groups.patch with `|| true` after the
# __syncthreads_or (each block counts its group but none sums it: timing only, its weight
# gradients are wrong), its Nsight launch sequence at C = 384 against hg_new's (the same plane
# kernels as e6efdc4). Pack: build/labbin holds hg_new (the tree) and hg_diag, KEEP_NEW=0
# dev/labbin-pack.sh; carry ["build/labpack"].
NAME=s40c
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader  # (GPU tests of these kernels: dev/s40b.sh)
final_call hg_new
el final
config_rows hg_new
el configs
seq_each 384 hg_new hg_diag
grep -E "plane_" $OUT/seq-384-hg_new.txt | head -4; grep -E "plane_" $OUT/seq-384-hg_diag.txt | head -4
el done
