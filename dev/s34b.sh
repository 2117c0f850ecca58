#!/usr/bin/env bash
# Dev use (device tool): gradient clipping fused into AdamW (clip_gradients,
# AdamW::clip_in_next_step) and the chunk-table sum of squares: test_gpu (GpuOptimizer's
# fused-clip test, the graphed step with the fused clip against eager steps with clip_grad_norm,
# the reductions past 256 chunks), the loss / reduction harness cases, then the config step with
# and without --clip_grad 1.0 for hg_base (the session's start) and hg_new, bf16.
# Pack: as dev/s34a.sh. Carry ["build/labpack", ".golden"].
NAME=s34b
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 100 $L/test_gpu > $R/gpu.log 2>&1
echo "test_gpu rc $?"; ok $R/gpu.log; grep -A6 "Failure" $R/gpu.log | head -20
timeout 150 $L/test_ops --gtest_filter='*Gpu*:*Cuda*' > $R/ops.log 2>&1
echo "test_ops GPU rc $?"; ok $R/ops.log; grep -A6 "Failure" $R/ops.log | head -20
el tests
row() {  # V EXTRA...
  local v=$1; shift
  timeout 80 $L/$v bench configs/convnext_tiny.yaml --device cuda --precision bf16 --steps 10 \
    --warmup 3 "$@" > $R/c.txt 2>&1
  echo "== $v $*"; grep -E "^convnext_tiny|nodes" $R/c.txt | cut -c1-110
}
for round in 1 2; do
  for v in hg_base hg_new; do row $v; row $v --clip_grad 1.0; done
done 2>&1 | tee $OUT/clip.txt
el bench
timeout 150 python3 scripts/peer-bench.py --steps 5 --warmup 3 --modes fp32,amp_bf16 \
  --output $OUT/peer.json > $OUT/peer.txt 2>&1
echo "peer-bench rc $?"; tail -4 $OUT/peer.txt | cut -c1-170
el peer
