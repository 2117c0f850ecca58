#!/usr/bin/env bash
# Forty-seventh session, the last call: the final tree's GPU tests; on an H200 also both models in
# fp32 (issue 11 asks fp32 >= 1,300 img/s of the H200; this session's other call ran on an H100).
# Pack: build the tree, dev/labbin-pack.sh; carry ["build/labpack", ".golden"].
NAME=s47b
source dev/labbin-lib.sh
tests_first
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  model_rows fp32 convnext_tiny,wtconvnext_tiny hg_new
  model_rows bf16 convnext_tiny,wtconvnext_tiny hg_new
  el model
fi
