#!/usr/bin/env bash
# Forty-eighth session, the short call (the device budget left after failed starts): the tree's GPU
# tests (the cross-entropy kernel's new order among them), the main job on the GPU (issue 10:
# Fashion-MNIST bf16 >= 90% top-1), a plateau run and the timm schedule check (38 cases). Pack:
# build the tree, dev/labbin-pack.sh; carry ["build/labpack", ".golden", ".fmnist"].
NAME=s48b
source dev/labbin-lib.sh
tests_first
fm_main 60
fm_case plateau 40 "sched plateau, patience 0" "plateau|done:|error|warn" --sched plateau \
  --patience-epochs 0 --decay-rate 0.5 --warmup-epochs 0 --epochs 4
sched_check
