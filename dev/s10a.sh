#!/usr/bin/env bash
# Dev use (device tool), tenth session, first call: the ninth session's last commits (review fixes,
# not run on a GPU yet) through the GPU tests; the model bench in three precisions; timm's peer
# bench in all four modes (its fp32 / tf32 memory was never measured: issue 11).
set -uo pipefail
source dev/run-lib.sh
el built
gpu_tests
el tests
timeout 90 $HG bench --device cuda --batch 128 --img-size 224 --precision fp32,tf32,bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 --output $OUT/bench.json > $OUT/bench.txt 2>&1; grep -A30 "^model  " $OUT/bench.txt | cut -c1-170 | grep -v "^$\|^timed\|^syncs" | head -40
el bench
timeout 240 python3 scripts/peer-bench.py --steps 10 --warmup 3 --modes fp32,tf32,amp_bf16,compile_bf16 --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1; tail -6 $OUT/peer.txt
el done
