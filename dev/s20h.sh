#!/usr/bin/env bash
# Dev use (device tool), twentieth session's final call, prebuilt binaries of the submitted tree
# (carry ["build/labpack", ".golden"]; hg_new, test_ops, test_gpu, packed by dev/labbin-pack.sh):
# commit c5df07d (test_gpu and the op harness passed on it in dev/s20g.sh, so not rerun).
# bench-layer bf16 and fp32; the model bench in bf16 (twice), fp32
# and tf32; timm's peer bench in the same call. $OUT gets a few files.
NAME=s20h
source dev/labbin-lib.sh
{ IO=1 layer_rows bf16 hg_new; IO=1 layer_rows fp32 hg_new; } > $OUT/bench-layer.txt 2>&1
el bench-layer
for p in bf16 fp32 tf32 bf16; do model_rows $p convnext_tiny,wtconvnext_tiny hg_new; done > $OUT/model.txt 2>&1
el model
timeout 120 python3 scripts/peer-bench.py --steps 10 --warmup 3 --modes amp_bf16,compile_bf16 \
  --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1
el peer
grep -E "^==|wtconv fused|ours dw 7" $OUT/bench-layer.txt; grep -E "^==|128 " $OUT/model.txt | cut -c1-140
tail -3 $OUT/peer.txt | cut -c1-160
