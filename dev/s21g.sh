#!/usr/bin/env bash
# Dev use (device tool), twenty-first session, after the final call: dev/s21f.sh's timm
# torch.compile + amp bf16 figure (3,466 img/s) was well below every earlier call's (4,005-4,053),
# so a second same-call pair: our bf16 model bench (commit b5c3c8d's program) and timm's peer
# bench (amp_bf16, compile_bf16) again.
NAME=s21g
source dev/labbin-lib.sh
model_rows bf16 convnext_tiny,wtconvnext_tiny hg_new > $OUT/model.txt 2>&1
el model
timeout 150 python3 scripts/peer-bench.py --steps 10 --warmup 3 --modes amp_bf16,compile_bf16 \
  --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1
el peer
grep -E "^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
tail -3 $OUT/peer.txt | cut -c1-160
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
