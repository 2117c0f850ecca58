#!/usr/bin/env bash
# Dev use (device tool): the fourth session's closing run, one call (the device budget allows one):
# build, every GPU test, bench of both models in bf16 / tf32 / fp32, the recipe on / off from a JPEG
# folder (WTConvNeXt-T bf16, issue 14), the loader stb vs turbo with 14 workers (issue 13), timm's
# peer bench last (amp bf16, compile + amp bf16) in the time that is left. Logs under $OUT.
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
left() { echo $(( ${BUDGET:-560} - ($(date +%s) - T0) )); }
HG=/tmp/b/haargrad
ok() { grep -E "^\[  (FAILED|PASSED)|FAILED  \]" "$1" | head -6; }
el "built $(git log --oneline -1 2>/dev/null | cut -c1-60)"
timeout 60 /tmp/b/tests/test_gpu > $OUT/tests.log 2>&1; ok $OUT/tests.log
timeout 90 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > /tmp/ops.log 2>&1; ok /tmp/ops.log; cat /tmp/ops.log >> $OUT/tests.log
timeout 40 /tmp/b/tests/test_data --gtest_filter='GpuStage*' > /tmp/data.log 2>&1; ok /tmp/data.log; cat /tmp/data.log >> $OUT/tests.log
el tests
timeout 120 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16,tf32,fp32 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 6 --warmup 2 --output $OUT/bench.json > $OUT/bench.txt 2>&1
grep -A7 "^model  " $OUT/bench.txt | head -16
el bench
( python3 scripts/make-jpeg-folder.py --out /tmp/jf --classes 20 --train-per-class 160 --val-per-class 5 > /tmp/mk.log 2>&1 ) &
MK=$!
timeout 150 python3 scripts/peer-bench.py --steps 10 --warmup 4 --modes amp_bf16,compile_bf16 --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1; tail -3 $OUT/peer.txt
el peer
wait $MK; tail -1 /tmp/mk.log
R="configs/wtconvnext_tiny.yaml --num-classes 20 --workers 14 --output /tmp/runs --plain --device cuda --precision bf16 --warmup-epochs 1 --lr 1e-3 --epochs 5 --grad-accum-steps 1 --dataset image_folder --data-dir /tmp/jf --val-split validation"
r() { n=$1; shift; timeout $(( $(left) > 70 ? 70 : $(left) )) $HG train $R --experiment $n "$@" > /tmp/x.log 2>&1; echo "== $n: $(grep -E 'done:|error' /tmp/x.log | tail -1 | cut -c1-170)"; grep -E "epoch [45]/5:" /tmp/x.log | cut -c1-220; cp /tmp/runs/$n/summary.csv $OUT/summary-$n.csv 2>/dev/null; }
eval r recipe_on
eval r recipe_off --aa "''" --reprob 0 --mixup 0 --cutmix 0 --model-ema false
el recipe
for dec in stb turbo; do for aug in plain recipe; do
  A=""; [ $aug = plain ] && A="--aa '' --reprob 0 --mixup 0 --cutmix 0 --color-jitter 0"
  eval timeout 40 $HG bench-data configs/wtconvnext_tiny.yaml --device cpu --dataset image_folder --data-dir /tmp/jf --val-split validation --workers 14 --batch-size 128 --bench-warmup 1 --bench-epochs 2 --decoders $dec $A > /tmp/bd.txt 2>&1
  echo "$dec $aug: $(grep -E "^(stb|turbo) " /tmp/bd.txt | head -1 | cut -c1-140)"
done; done
el done
