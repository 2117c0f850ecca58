#!/usr/bin/env bash
# Forty-eighth session, the short call (the device budget left after failed starts): the tree's GPU
# tests (the cross-entropy kernel's new order among them), the main job on the GPU (issue 10:
# Fashion-MNIST bf16 >= 90% top-1), a plateau run and the timm schedule check (38 cases). Pack:
# build the tree, dev/labbin-pack.sh; carry ["build/labpack", ".golden", ".fmnist"].
NAME=s48b
source dev/labbin-lib.sh
tests_first
F="--data-dir $PWD/.fmnist --output /tmp/runs --workers 8 --plain --device cuda"
timeout 60 $L/hg_new train configs/fashion_mnist.yaml $F --precision bf16 --experiment fm_bf16 \
  > $OUT/fmnist_bf16.log 2>&1
echo "== bf16 (rc $?)"
grep -E "training step:|epoch 6/6|best|error|warn" $OUT/fmnist_bf16.log | tail -6 | cut -c1-220
el fmnist
timeout 40 $L/hg_new train configs/fashion_mnist.yaml $F --precision bf16 --experiment plateau \
  --sched plateau --patience-epochs 0 --decay-rate 0.5 --warmup-epochs 0 --epochs 4 \
  > $OUT/plateau.log 2>&1
echo "== sched plateau, patience 0 (rc $?)"
grep -E "plateau|error|warn" $OUT/plateau.log | cut -c1-220
cut -d, -f1-6 /tmp/runs/plateau/summary.csv | tee $OUT/plateau_summary.csv
el plateau
timeout 60 python3 scripts/timm-sched-check.py --haargrad $L/hg_new --out $OUT/sched-check.json \
  > $OUT/sched-check.txt 2>&1
echo "== timm-sched-check (rc $?)"; tail -3 $OUT/sched-check.txt
el sched-check
