#!/usr/bin/env bash
# Forty-fifth session: the submitted tree's GPU tests, then final_call (bench-layer bf16 / fp32,
# both models in bf16, fp32, tf32, bf16, timm's peer bench), all in one call: the closing note's
# figures. Pack: build the tree, dev/labbin-pack.sh; carry ["build/labpack", ".golden"].
NAME=s45b
source dev/labbin-lib.sh
tests_first
final_call hg_new
