#!/usr/bin/env bash
# Dev use (device tool), session 3: PART=k builds, runs the GPU tests, bench-layer (bf16, fp32),
# a per-kernel ncu timing of one bf16 WTConv layer step and the two models in bf16; PART=d the data
# loader per backend beside torchvision, WTConvNeXt-T bf16 trained from JPEG (nvJPEG, CPU decode)
# against synthetic data, and the full recipe on / off from the JPEG folder. Logs under $OUT.
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
HG=/tmp/b/haargrad
tests() {
  timeout 150 /tmp/b/tests/test_gpu > $OUT/gpu-tests.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/gpu-tests.log | head -8
  timeout 150 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > $OUT/ops-gpu.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/ops-gpu.log | head -8
}
if [ "${PART:-k}" = k ]; then
  el built; tests; el tests
  for p in bf16 fp32; do timeout 60 $HG bench-layer --kernel 5 --precision $p > $OUT/bench-layer-$p.txt 2>&1; grep -E "^(wtconv fused|ours dw 7)" $OUT/bench-layer-$p.txt | cut -c1-70; done
  el bench-layer
  timeout 100 ncu --metrics gpu__time_duration.sum --csv $HG bench-layer --kernel 5 --precision bf16 --channels 96 --iters 1 --warmup 0 > $OUT/ncu-bf16.csv 2>/dev/null
  python3 - <<'PY'
import csv, os
rows = [r for r in csv.reader(open(os.environ["OUT"] + "/ncu-bf16.csv")) if len(r) > 10]
h = rows[0]; k = h.index("Kernel Name"); v = h.index("Metric Value")
seq = [(r[k].split("(")[0].split("::")[-1][:34], float(r[v].replace(",", ""))) for r in rows[1:]]
# the first wtconv fused train step: from the first fill to the first 'ours dw' pass is enough
print("kernels", len(seq)); print(" ".join(f"{n}:{t/1000:.0f}" for n, t in seq[:70]))
PY
  el ncu
  timeout 150 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 8 --warmup 3 > $OUT/bench.txt 2>&1; grep -A4 "^model  " $OUT/bench.txt | head -6
  el done
else
  el built
  STAGES=data-bench BUILD=/tmp/b timeout 200 scripts/gpu-check.sh > $OUT/data-bench.txt 2>&1; grep -vE "^\s*$" $OUT/data-bench.txt | tail -16 | cut -c1-150
  el data-bench
  J="--dataset image_folder --data-dir /tmp/hg-jpeg-folder --val-split validation --num-classes 20 --workers 14 --output /tmp/runs --plain --device cuda --precision bf16 --warmup-epochs 1 --lr 1e-3"
  OFF="--aa '' --reprob 0 --mixup 0 --cutmix 0 --color-jitter 0 --model-ema false --train-interpolation bilinear"
  r() { n=$1; shift; timeout 120 $HG train configs/wtconvnext_tiny.yaml --experiment $n "$@" > $OUT/train-$n.log 2>&1; echo "$n: $(grep -E 'done:|error|diverg|NaN' $OUT/train-$n.log | tail -1 | cut -c1-200)"; grep -E "^epoch|data wait|waited" $OUT/train-$n.log | tail -2 | cut -c1-200; }
  eval r synthetic --dataset synthetic --synthetic-size 5000 --num-classes 20 --output /tmp/runs --plain --device cuda --precision bf16 --warmup-epochs 1 --lr 1e-3 --workers 14 $OFF --epochs 3
  eval r jpeg_nvjpeg $J $OFF --decode nvjpeg --epochs 3
  eval r jpeg_cpu $J $OFF --decode cpu --epochs 3
  el jpeg
  eval r recipe_on $J --epochs 5
  cp /tmp/runs/recipe_on/summary.csv $OUT/recipe_on_summary.csv 2>/dev/null; cp /tmp/runs/recipe_on/curves.png $OUT/recipe_on_curves.png 2>/dev/null
  eval r recipe_off $J $OFF --epochs 5
  el done
fi
