#!/usr/bin/env bash
# Dev use (device tool), tenth session, final call on the submitted code: GPU tests; the model bench
# in three precisions; the bf16 breakdown with its roofline column (issue 11); bench-layer (issue
# 12); timm's amp / compiled bf16 beside them; WTConvNeXt-T bf16 from JPEGs (nvjpeg, op by op as
# the trainer runs it) against synthetic data (graphed), 100-step epochs; the loader alone per
# decode backend beside torchvision.
set -uo pipefail
source dev/run-lib.sh
el built
jpeg_folder /tmp/jf8 320 14
gpu_tests
el tests
timeout 90 $HG bench --device cuda --batch 128 --img-size 224 --precision fp32,tf32,bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 --output $OUT/bench.json > $OUT/bench.txt 2>&1; grep -A30 "^model  " $OUT/bench.txt | cut -c1-170 | grep -v "^$\|^timed\|^syncs" | head -40
el bench
timeout 90 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny,wtconvnext_tiny --breakdown --steps 5 --warmup 2 > $OUT/breakdown.txt 2>&1; grep -B2 -A16 "^op type" $OUT/breakdown.txt | cut -c1-180 | head -50
el breakdown
for p in fp32 bf16; do timeout 45 $HG bench-layer --kernel 5 --precision $p > $OUT/bench-layer-$p.txt 2>&1; done; grep -E "^[0-9 ]+/|train|C " $OUT/bench-layer-bf16.txt | head -14
el bench-layer
timeout 120 python3 scripts/peer-bench.py --steps 10 --warmup 3 --modes amp_bf16,compile_bf16 --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1; tail -3 $OUT/peer.txt
el peer
folder_ready /tmp/jf8
jpeg_vs_synth /tmp/jf8
grep -h "training step:" $OUT/train-*.log | cut -c12-
el train
timeout 60 $HG bench-data configs/convnext_tiny.yaml --device cuda --precision bf16 --dataset image_folder --data-dir /tmp/jf8 --val-split validation --workers 14 --batch-size 128 --img-size 224 --aa '' --reprob 0 --color-jitter 0 --mixup 0 --cutmix 0 --train-interpolation bilinear --max-steps-per-epoch 20 --bench-warmup 1 --bench-epochs 1 --decoders stb,turbo,nvjpeg,nvjpeg_gpu --output $OUT/bench_data.json > $OUT/bench_data.txt 2>&1; grep -E "^decoder|^(stb|turbo|nvjpeg)" $OUT/bench_data.txt | cut -c1-150
timeout 60 python3 scripts/peer-data-bench.py --data-dir /tmp/jf8 --workers 14 --batch-size 128 --img-size 224 --bench-warmup 1 --bench-epochs 1 --output $OUT/peer_data.json > $OUT/peer_data.txt 2>&1; tail -2 $OUT/peer_data.txt
el done
