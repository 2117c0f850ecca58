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
fm_main 150
final_call hg_new
fm_case plateau 100 "sched plateau, patience 0" "plateau|done:|error|warn" --sched plateau \
  --patience-epochs 0 --decay-rate 0.5 --warmup-epochs 0 --epochs 4
timm_check
sched_check
fm_case drop 100 "graphed, head dropout 0.3, drop path 0.2, no layer scale" \
  "training step:|op by op|capturing|epoch 2/2|error|warn" --drop 0.3 --drop-path 0.2 \
  --ls-init-value null --epochs 2
fm_case step 100 "sched step" "done:|best_|error|warn" --sched step --decay-epochs 1 \
  --decay-rate 0.5 --warmup-epochs 0 --epochs 3
config_breakdown
