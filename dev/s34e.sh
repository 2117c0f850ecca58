#!/usr/bin/env bash
# Dev use (device tool): the submitted tree's GPU tests (test_gpu, every op harness GPU / CUDA
# case), after the review fixes. Pack: KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack",
# ".golden"].
NAME=s34e
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests
el tests
cat $OUT/tests.txt
