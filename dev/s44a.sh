#!/usr/bin/env bash
# Forty-fourth session: dev/s43a.sh with the period-2 lab's second forward variant
# (p2_forward16_kernel: 16 x 16 warp tiles, half the shared loads an output, two blocks a
# multiprocessor; dev/wtconv_p2/README.md) checked and timed beside the first, in the forward
# at L = 1 and in the whole forward / grad_x at L levels; then dev/s42b.sh (the tensor-core
# depthwise patch's variants). Pack as dev/s43a.sh says; carry ["build/labpack", ".golden"].
bash dev/s42c.sh
bash dev/s42b.sh
