#!/usr/bin/env bash
# Dev use (device tool), fourteenth session's second final call (dev/s14c.sh after its fixes: the
# nvjpeg graph test reads log.txt; "waited for data" is the GPU's idle time), on the submitted
# code: the GPU tests;
# WTConvNeXt-T bf16 3 epochs (100 steps) from JPEGs, graphed with 32 hardware queues, against
# synthetic data through the same GPU transform (issue 13's ratio), with the new "waited for data";
# the loader alone per decode backend beside torchvision + PIL (same workers); the model bench in
# bf16.
set -uo pipefail
source dev/run-lib.sh
jpeg_folder /tmp/jf8 320 14
el built
timeout 170 /tmp/b/tests/test_gpu > $OUT/gpu.log 2>&1; ok $OUT/gpu.log
grep -A4 "Failure" $OUT/gpu.log | head -20
el tests
folder_ready /tmp/jf8
J="--workers 14 --dataset image_folder --data-dir /tmp/jf8 --val-split validation --decode nvjpeg"
eval train3 synth_gpu --workers 14 --dataset synthetic --synthetic-size 12800 --gpu-augment true
eval train3 nv_graph $J
grep -H "training step:\|JPEG decoder thread" $OUT/train-*.log | sed -E 's/^[^:]*train-//' | cut -c1-200
el trained
timeout 90 $HG bench-data configs/convnext_tiny.yaml --device cuda --precision bf16 --dataset image_folder --data-dir /tmp/jf8 --val-split validation --workers 14 --batch-size 128 --img-size 224 --aa '' --reprob 0 --color-jitter 0 --mixup 0 --cutmix 0 --train-interpolation bilinear --max-steps-per-epoch 20 --bench-warmup 1 --bench-epochs 1 --decoders stb,turbo,nvjpeg,nvjpeg_gpu --output $OUT/bench_data.json > $OUT/bench_data.txt 2>&1; grep -E "^decoder|^(stb|turbo|nvjpeg)" $OUT/bench_data.txt | cut -c1-100
python3 -c "import json; [print(r['jpeg_decoder'], r['decoded']) for r in json.load(open('$OUT/bench_data.json'))]"
timeout 60 python3 scripts/peer-data-bench.py --data-dir /tmp/jf8 --workers 14 --batch-size 128 --img-size 224 --bench-warmup 1 --bench-epochs 1 --output $OUT/peer_data.json > $OUT/peer_data.txt 2>&1; tail -2 $OUT/peer_data.txt
el data
timeout 70 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 --output $OUT/bench.json > $OUT/bench.txt 2>&1; grep -A30 "^model  " $OUT/bench.txt | cut -c1-170 | grep -v "^$\|^timed\|^syncs\|replayed" | head -12
el bench
el done
