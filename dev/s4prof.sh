#!/usr/bin/env bash
# Dev use (device tool): per-kernel GPU time of one bf16 training step (ncu, gpu__time_duration),
# aggregated by kernel name, for the models in $MODELS. Usage: MODELS=convnext_tiny bash dev/s4prof.sh
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
el built
for m in ${MODELS:-convnext_tiny}; do
  # warm-up 1 + timed 1 (train) phase only: --infer-steps 0 if present; kernels of both steps are summed and halved
  timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
    /tmp/b/haargrad bench --device cuda --batch 128 --img-size 224 --precision ${PREC:-bf16} --models $m \
    --wtconv fused --steps 1 --warmup 1 > $OUT/ncu-$m.csv 2> $OUT/ncu-$m.err
  python3 dev/ncu_sum.py $OUT/ncu-$m.csv 2 | head -${TOP:-40}
  el "$m done"
done
