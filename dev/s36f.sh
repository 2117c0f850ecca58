#!/usr/bin/env bash
# Thirty-sixth session: the StepGraph tests alone (drop path in a replayed step). Pack: KEEP_NEW=0
# dev/labbin-pack.sh; carry ["build/labpack", ".golden"].
NAME=s36f
source dev/labbin-lib.sh
timeout 200 $L/test_gpu --gtest_filter="${FILTER:-StepGraph*}" 2>&1 | grep -vE "^\[[0-9:]+\] info" | tail -60 | tee $OUT/stepgraph.txt
