#!/usr/bin/env bash
# Dev use (device tool), seventh session: GPU tests of the whole-plane WTConv commit, bench of both
# models in three precisions, bench-layer, and timm's peer bench in the same call.
set -uo pipefail
source dev/run-lib.sh
el built
gpu_tests
el tests
timeout 120 $HG bench --device cuda --batch 128 --img-size 224 --precision fp32,tf32,bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 6 --warmup 2 --output $OUT/bench.json > $OUT/bench.txt 2>&1; grep -A22 "^model  " $OUT/bench.txt | cut -c1-170 | head -24
el bench
for p in bf16 fp32; do timeout 60 $HG bench-layer --kernel 5 --precision $p > $OUT/bl-$p.txt 2>&1; grep -E "^(impl|wtconv|ours dw 7)|I/O model|error" $OUT/bl-$p.txt | cut -c1-150; done
el bench-layer
timeout $(( $(left) - 10 )) python3 scripts/peer-bench.py --steps 8 --warmup 3 --modes amp_bf16,compile_bf16 --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1; tail -5 $OUT/peer.txt
el done
