#!/usr/bin/env bash
# Thirty-sixth session: the submitted tree's GPU tests (test_gpu and every op harness GPU / CUDA
# case, skips listed), then the 224 px configs' own step in bf16 after the drop-path mask fix.
# Pack: KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s36h
source dev/labbin-lib.sh
tests_first
config_rows hg_new
el cfg
