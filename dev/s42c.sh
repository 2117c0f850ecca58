#!/usr/bin/env bash
# Forty-second session, prepared (not run): the period-2 lab (dev/wtconv_p2/p2.cu: WTConv's base
# conv + level 0 as one tensor-core pass) checked at odd shapes (against a CPU loop and against
# the product's fused forward at L = 1) and timed at the four WTConvNeXt-T stage shapes against the
# product's L = 1 forward (two passes) and its 7x7 forward. Pack: build with -DHAARGRAD_DEV=ON,
# `cp build/dev/wtconv_p2/wtconv_p2_lab build/labbin/hg_p2lab`, then dev/labbin-pack.sh (remove
# build/labbin/hg_base first if the pack would pass 64 MiB); carry ["build/labpack", ".golden"].
NAME=s42c
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 300 $L/hg_p2lab 20 2>&1 | tee $OUT/p2lab.txt  # ~1-2 min: forward, grad_x, wgrad
el p2lab
