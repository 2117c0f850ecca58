#!/usr/bin/env bash
# Forty-fifth session, final call: the submitted tree's GPU tests, the main job on the GPU (issue
# 10: Fashion-MNIST bf16 >= 90% top-1), and this session's no-validation mode on CUDA (val_split
# '', two epochs: ranked by train loss, then a resume of one more epoch).
# Pack: build the tree, dev/labbin-pack.sh; mkdir -p .fmnist && cp
# /usr/share/datasets/fashion-mnist/*.gz .fmnist/ (Debian's dataset-fashion-mnist);
# carry ["build/labpack", ".golden", ".fmnist"].
NAME=s45c
source dev/labbin-lib.sh
tests_first
F="--data-dir $PWD/.fmnist --output /tmp/runs --workers 8 --plain --device cuda"
timeout 150 $L/hg_new train configs/fashion_mnist.yaml $F --precision bf16 --experiment fm_bf16 \
  > $OUT/fmnist_bf16.log 2>&1
echo "== bf16 (rc $?)"
grep -E "training step:|epoch 6/6|best|error|warn" $OUT/fmnist_bf16.log | tail -6 | cut -c1-220
el fmnist
timeout 100 $L/hg_new train configs/fashion_mnist.yaml $F --precision bf16 --experiment noval \
  --val-split '' --epochs 2 > $OUT/noval.log 2>&1
echo "== no validation (rc $?)"
timeout 100 $L/hg_new train --resume /tmp/runs/noval/last.safetensors --epochs 3 --plain \
  >> $OUT/noval.log 2>&1
echo "== resumed (rc $?)"
grep -E "val: |done:|best_|error|warn" $OUT/noval.log | cut -c1-220
cat /tmp/runs/noval/summary.csv | tee $OUT/noval_summary.csv
el noval
