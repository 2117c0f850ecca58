#!/usr/bin/env bash
# Dev use (device tool), ninth session: GPU tests; our bench and timm's peer bench (amp bf16,
# torch.compile + amp bf16) in one call; WTConvNeXt-T bf16 from JPEGs without the CUDA graph.
set -uo pipefail
source dev/run-lib.sh
el built
jpeg_folder /tmp/jf8 320 14
gpu_tests
el tests
timeout 60 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 --output $OUT/bench.json > $OUT/bench.txt 2>&1; grep -A12 "^model  " $OUT/bench.txt | cut -c1-170 | head -14
el bench
timeout 200 python3 scripts/peer-bench.py --steps 10 --warmup 3 --modes amp_bf16,compile_bf16 --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1; tail -5 $OUT/peer.txt
el peer
folder_ready /tmp/jf8
eval train3 jpeg_eager --workers 14 --dataset image_folder --data-dir /tmp/jf8 --val-split validation --decode nvjpeg --cuda-graph false
el done
