#!/usr/bin/env bash
# Dev use (device tool), twenty-ninth session: the split path against the whole-plane kernels at the
# 14 x 14 and 7 x 7 stages (hg_new built with a temporary HG_NO_WHOLE_PLANE switch that skips
# try_plane_forward / try_plane_backward): bench-layer and WTConvNeXt-T, each way in this call.
# Pack: dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s29b
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
bl() {  # precision batch
  timeout 60 $L/hg_new bench-layer --kernel 5 --precision $1 --batch $2 > $R/bl.txt 2>&1
  grep -E "^(wtconv fused|ours dw 7)" $R/bl.txt | grep -E "384/14|768/7"
}
for p in bf16 fp32 tf32; do for b in 64 128; do
  echo "== plane $p B $b"; bl $p $b
  echo "== split $p B $b"; HG_NO_WHOLE_PLANE=1 bl $p $b
done; done 2>&1 | tee $OUT/bench-layer.txt
for round in 1 2; do
  echo "== plane"; model_rows bf16 wtconvnext_tiny hg_new | grep -E "^wtconvnext_tiny.* bf16 +128 " | cut -c1-120
  echo "== split"; HG_NO_WHOLE_PLANE=1 model_rows bf16 wtconvnext_tiny hg_new | grep -E "^wtconvnext_tiny.* bf16 +128 " | cut -c1-120
done 2>&1 | tee $OUT/model.txt
el done
