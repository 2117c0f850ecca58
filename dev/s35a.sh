#!/usr/bin/env bash
# Dev use (device tool): the thirty-fifth session's tree on a GPU: test_gpu and every op harness
# GPU / CUDA case (the level-grid refactor, the reference order's scale gradients on the
# depthwise weight gradient, the harness cases moved from the per-op tests), then the final
# figures of its program (final_call: bench-layer bf16 / fp32, both models in bf16, fp32, tf32,
# bf16 by name, timm's peer bench) and the 224 px configs' own step in bf16.
# Pack: KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s35a
source dev/labbin-lib.sh
tests_first
final_call hg_new
config_rows hg_new
el cfg
