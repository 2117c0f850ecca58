#!/usr/bin/env bash
# The session's closing device runs (dev use), in two calls made back to back so the build in
# /tmp/b survives: PART=a builds, runs every GPU test, the model bench in the three precisions,
# timm's peer bench and the timm <-> haargrad logits check; PART=b the data loader per decode
# backend beside torchvision, training from JPEG against synthetic data, the full recipe on and
# off, the NCCL path on one GPU, Fashion-MNIST in bf16 and a bf16 breakdown. Logs under $OUT.
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
HG=/tmp/b/haargrad
if [ "${PART:-a}" = a ]; then
  el built; grep -E "haargrad: (nvJPEG|NCCL|MPI)" /tmp/b.log | cut -c1-80 | head -3
  timeout 150 /tmp/b/tests/test_gpu > $OUT/gpu-tests.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/gpu-tests.log | head -8
  timeout 150 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > $OUT/ops-gpu.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/ops-gpu.log | head -8
  timeout 60 /tmp/b/tests/test_data --gtest_filter='GpuStage*' > $OUT/data-gpu.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/data-gpu.log | head -4
  timeout 90 /tmp/b/tests/test_models --gtest_filter='Golden*' > $OUT/golden-cpu.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/golden-cpu.log | head -4
  el tests
  timeout 150 $HG bench --device cuda --batch 128 --img-size 224 --precision fp32,tf32,bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 --output $OUT/bench.json > $OUT/bench.txt 2>&1; grep -A16 "^model  " $OUT/bench.txt | grep -E "^(model|convnext|wtconv)" | head -14
  el bench
  timeout 200 python3 scripts/peer-bench.py --steps 12 --warmup 5 --modes tf32,amp_bf16,compile_bf16 --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1; tail -6 $OUT/peer.txt
  el peer
  timeout 240 python3 -u scripts/timm-check.py --haargrad $HG --out $OUT/timm-check.json > $OUT/timm-check.txt 2>&1; tail -4 $OUT/timm-check.txt
  el timm-check
else
  el built
  timeout 100 /tmp/b/tests/test_gpu > $OUT/gpu-tests-b.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/gpu-tests-b.log | head -6
  timeout 120 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > $OUT/ops-gpu-b.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/ops-gpu-b.log | head -6
  el tests
  STAGES=data-bench BUILD=/tmp/b timeout 150 scripts/gpu-check.sh > $OUT/data-bench.txt 2>&1; grep -E "^(decoder|turbo|nvjpeg|torchvision)|error" $OUT/data-bench.txt | head -12
  el data-bench
  J="--dataset image_folder --data-dir /tmp/hg-jpeg-folder --val-split validation --num-classes 20 --workers 14 --output /tmp/runs --plain --device cuda --precision bf16"
  OFF="--aa '' --reprob 0 --mixup 0 --cutmix 0 --color-jitter 0 --model-ema false --train-interpolation bilinear"
  r() { n=$1; shift; timeout 100 $HG train configs/wtconvnext_tiny.yaml --experiment $n "$@" > $OUT/train-$n.log 2>&1; echo "$n: $(grep -E 'done:|error' $OUT/train-$n.log | tail -1 | cut -c1-190)"; }
  r synthetic --dataset synthetic --synthetic-size 5000 --num-classes 20 --output /tmp/runs --plain --device cuda --precision bf16 --epochs 3 --warmup-epochs 0 --grad-accum-steps 1 --workers 14 --aa '' --reprob 0 --mixup 0 --cutmix 0 --color-jitter 0 --model-ema false
  eval r jpeg_nvjpeg $J $OFF --decode nvjpeg --epochs 3 --warmup-epochs 0 --grad-accum-steps 1
  el jpeg
  r recipe_on $J --epochs 6; grep -E "epoch 6/6:" $OUT/train-recipe_on.log | cut -c1-220
  cp /tmp/runs/recipe_on/summary.csv $OUT/recipe_on_summary.csv 2>/dev/null
  eval r recipe_off $J $OFF --epochs 6
  el recipe
  for f in false true; do timeout 60 $HG train configs/convnext_tiny.yaml --dataset synthetic --synthetic-size 6400 --num-classes 100 --epochs 1 --warmup-epochs 0 --grad-accum-steps 1 --aa '' --reprob 0 --mixup 0 --cutmix 0 --model-ema false --device cuda --precision bf16 --workers 14 --dist_force $f --output /tmp/runs --experiment dist_$f --plain > $OUT/dist-$f.log 2>&1; echo "dist_force $f: $(grep -E 'done:|error' $OUT/dist-$f.log | tail -1 | cut -c1-160)"; done
  el dist
  timeout 240 python3 -u scripts/timm-check.py --haargrad $HG --out $OUT/timm-check.json > $OUT/timm-check.txt 2>&1; tail -5 $OUT/timm-check.txt | cut -c1-200
  el done
fi
