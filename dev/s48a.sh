#!/usr/bin/env bash
# Forty-eighth session, one call for the tree (the forty-seventh
# session's host-code commits after 9644552 were never run on a GPU, and its figures came from an
# H100): its GPU tests, a graphed run with the head's dropout and no layer scale, the main job on
# the GPU (issue 10: Fashion-MNIST bf16 >= 90% top-1), a run with timm's step schedule, the timm
# round trip and schedule check (38 cases), a plateau run, the config's breakdown, then
# final_call (bench-layer
# bf16 / fp32, both models in fp32, tf32, bf16, timm's peer bench): the closing note's figures.
# Pack: build the tree, dev/labbin-pack.sh; mkdir -p .fmnist && cp
# /usr/share/datasets/fashion-mnist/*.gz .fmnist/; carry ["build/labpack", ".golden", ".fmnist"].
# TESTS_ONLY=1: the GPU tests alone. Ordered by need, the final figures early (device time is short).
NAME=s48a
source dev/labbin-lib.sh
tests_first
[ "${TESTS_ONLY:-0}" = 1 ] && exit 0  # the final tree's GPU tests alone
F="--data-dir $PWD/.fmnist --output /tmp/runs --workers 8 --plain --device cuda"
timeout 150 $L/hg_new train configs/fashion_mnist.yaml $F --precision bf16 --experiment fm_bf16 \
  > $OUT/fmnist_bf16.log 2>&1
echo "== bf16 (rc $?)"
grep -E "training step:|epoch 6/6|best|error|warn" $OUT/fmnist_bf16.log | tail -6 | cut -c1-220
el fmnist
final_call hg_new
timeout 100 $L/hg_new train configs/fashion_mnist.yaml $F --precision bf16 --experiment plateau \
  --sched plateau --patience-epochs 0 --decay-rate 0.5 --warmup-epochs 0 --epochs 4 \
  > $OUT/plateau.log 2>&1
echo "== sched plateau, patience 0 (rc $?)"
grep -E "plateau|done:|error|warn" $OUT/plateau.log | cut -c1-220
cat /tmp/runs/plateau/summary.csv | tee $OUT/plateau_summary.csv
el plateau
timeout 120 python3 scripts/timm-sched-check.py --haargrad $L/hg_new --out $OUT/sched-check.json \
  > $OUT/sched-check.txt 2>&1
echo "== timm-sched-check (rc $?)"; tail -13 $OUT/sched-check.txt
el sched-check
timeout 100 $L/hg_new train configs/fashion_mnist.yaml $F --precision bf16 --experiment drop \
  --drop 0.3 --drop-path 0.2 --ls-init-value null --epochs 2 > $OUT/drop.log 2>&1
echo "== graphed, head dropout 0.3, drop path 0.2, no layer scale (rc $?)"
grep -E "training step:|op by op|capturing|epoch 2/2|error|warn" $OUT/drop.log | cut -c1-220
el drop
timeout 100 $L/hg_new train configs/fashion_mnist.yaml $F --precision bf16 --experiment step \
  --sched step --decay-epochs 1 --decay-rate 0.5 --warmup-epochs 0 --epochs 3 > $OUT/step.log 2>&1
echo "== sched step (rc $?)"
grep -E "done:|best_|error|warn" $OUT/step.log | cut -c1-220
cat /tmp/runs/step/summary.csv | tee $OUT/step_summary.csv
el step
timeout 300 python3 scripts/timm-check.py --haargrad $L/hg_new --out $OUT/timm-check.json \
  > $OUT/timm-check.txt 2>&1
echo "== timm-check (rc $?)"
grep -vE "^\[|^ *$" $OUT/timm-check.txt | tail -8 | cut -c1-220
el timm-check
timeout 200 $L/hg_new bench configs/convnext_tiny.yaml --device cuda --precision bf16 --breakdown \
  > $OUT/breakdown.txt 2>&1
echo "== bench CONFIG --breakdown, drop path 0.1 (rc $?)"
grep -A24 "breakdown of one training step" $OUT/breakdown.txt | cut -c1-160
el breakdown
