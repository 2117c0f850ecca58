#!/usr/bin/env bash
# Forty-ninth session, the short call (device time left after failed starts): the tree's GPU tests
# (the cross-entropy kernels' first run on a GPU) and the main job on the GPU (Fashion-MNIST bf16).
# Pack as dev/s49a.sh. ~100 s after the start.
NAME=s49b
source dev/labbin-lib.sh
tests_first
fm_main 60
