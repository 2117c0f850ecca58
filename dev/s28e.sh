#!/usr/bin/env bash
# Dev use (device tool), twenty-eighth session: haar_wgrad_kernel's slices as one, two (hg_new, the
# submitted choice) or four waves of resident blocks (hg_w1, hg_w4: built with the factor changed):
# bench-layer bf16 twice and WTConvNeXt-T bf16 twice, each binary in this call.
# Pack: the variants in build/labbin, KEEP_NEW=1 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s28e
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
for round in 1 2; do layer_rows bf16 hg_w1 hg_new hg_w4; done 2>&1 | grep -E "^==|wtconv fused +(96|192)"
for round in 1 2; do model_rows bf16 wtconvnext_tiny hg_w1 hg_new hg_w4; done 2>&1 |
  grep -E "^==|^wtconvnext_tiny.* bf16 +128 " | cut -c1-120
el done
