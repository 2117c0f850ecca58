#!/usr/bin/env bash
# Forty-eighth session, the short call (the device budget left after failed starts): the tree's GPU
# tests (the cross-entropy kernel's new order among them), the main job on the GPU (issue 10:
# Fashion-MNIST bf16 >= 90% top-1), a plateau run and the timm schedule check (38 cases). Pack:
# build the tree, dev/labbin-pack.sh; carry ["build/labpack", ".golden", ".fmnist"].
NAME=s48b
source dev/labbin-lib.sh
tests_first
fm_run fm_bf16 60
echo "== bf16 (rc $?)"
grep -E "training step:|epoch 6/6|best|error|warn" $OUT/fm_bf16.log | tail -6 | cut -c1-220
el fmnist
fm_run plateau 40 --sched plateau --patience-epochs 0 --decay-rate 0.5 --warmup-epochs 0 --epochs 4
echo "== sched plateau, patience 0 (rc $?)"
grep -E "plateau|error|warn" $OUT/plateau.log | cut -c1-220
fm_summary plateau
el plateau
sched_check
