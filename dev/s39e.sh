#!/usr/bin/env bash
# Thirty-ninth session, a diagnostic (timing only: its weight gradients are wrong): dev/s39c.sh's
# plane patch with the last block's sums removed (the counter, the release and the acquire kept),
# so that the plane kernel's time says whether s39b / s39c's +30 us is the last blocks' summation
# or the count itself. Nsight's per-kernel times at C = 384 for it (hg_new) and bench-layer bf16.
# Pack: the patch (dev/s39/plane-slice-groups.patch) with `|| true` after the __syncthreads_or,
# KEEP_NEW=0 dev/labbin-pack.sh; carry ["build/labpack"].
NAME=s39e
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
seq_each 384 hg_new
grep -E "plane_" $OUT/seq-384-hg_new.txt | head -4
layer_rows bf16 hg_new hg_base | grep -E "^==|wtconv fused"
el done
