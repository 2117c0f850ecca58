#!/usr/bin/env bash
# Dev use (device tool), fifth session: the staged WTConv synthesis and the folded layer scale
# (gelu_linear_residual): GPU tests, bench of both models in three precisions, bench-layer, then
# (PART=all) timm's peer bench and the recipe on / off from a 12,800-file JPEG folder (issue 14).
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
left() { echo $(( ${BUDGET:-560} - ($(date +%s) - T0) )); }
HG=/tmp/b/haargrad
el built
if [ "${PART:-all}" = all ]; then
  ( python3 scripts/make-jpeg-folder.py --out /tmp/jf2 --classes 40 --train-per-class 320 --val-per-class 5 --jobs 6 > /tmp/mk.log 2>&1 ) &
  MK=$!
fi
ok() { grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $1 | head -8; }
timeout 150 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > $OUT/ops.log 2>&1; ok $OUT/ops.log
timeout 60 /tmp/b/tests/test_gpu > $OUT/gpu.log 2>&1; ok $OUT/gpu.log
el tests
timeout 150 $HG bench --device cuda --batch 128 --img-size 224 --precision fp32,tf32,bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 6 --warmup 2 --output $OUT/bench.json > $OUT/bench.txt 2>&1; grep -A18 "^model  " $OUT/bench.txt | head -24
el bench
for p in bf16 fp32; do timeout 60 $HG bench-layer --kernel 5 --precision $p > $OUT/bl-$p.txt 2>&1; grep -E "^(impl|wtconv fused|ours dw 7)" $OUT/bl-$p.txt; done
el bench-layer
[ "${PART:-all}" = all ] || exit 0
timeout 170 python3 scripts/peer-bench.py --steps 10 --warmup 4 --modes amp_bf16,compile_bf16 --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1; tail -4 $OUT/peer.txt
el peer
wait $MK; tail -1 /tmp/mk.log; du -sh /tmp/jf2 | cut -f1
R="configs/wtconvnext_tiny.yaml --num-classes 40 --workers 14 --output /tmp/runs --plain --device cuda --precision bf16 --warmup-epochs 1 --lr 1e-3 --epochs 3 --grad-accum-steps 1 --dataset image_folder --data-dir /tmp/jf2 --val-split validation"
r() { n=$1; shift; timeout $(( $(left) > 100 ? 100 : $(left) )) $HG train $R --experiment $n "$@" > $OUT/train-$n.log 2>&1; echo "== $n: $(grep -E 'done:|error' $OUT/train-$n.log | tail -1 | cut -c1-200)"; grep -E "epoch [0-9]/3:" $OUT/train-$n.log | cut -c1-240; cp /tmp/runs/$n/summary.csv $OUT/summary-$n.csv 2>/dev/null; cp /tmp/runs/$n/*.png $OUT/ 2>/dev/null; }
eval r recipe_on
eval r recipe_off --aa "''" --reprob 0 --mixup 0 --cutmix 0 --model-ema false
el done
