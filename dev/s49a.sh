#!/usr/bin/env bash
# Forty-ninth session, one call: the tree's GPU tests (the forty-eighth session's cross-entropy
# kernels never ran on a GPU), the main job on the GPU (issue 10: Fashion-MNIST bf16 >= 90%), then
# final_call (bench-layer bf16 / fp32, both models in bf16, fp32, tf32, bf16, timm's peer bench):
# the closing note's figures (issue 11's fp32 >= 1,300 img/s is an H200 figure). Pack: build the
# tree, dev/labbin-pack.sh; carry ["build/labpack", ".golden", ".fmnist"]. ~230 s after the start.
NAME=s49a
source dev/labbin-lib.sh
tests_first
fm_main 60
final_call hg_new
