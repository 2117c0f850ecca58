#!/usr/bin/env bash
# Thirty-sixth session: the host-drawn masks' buffer outside the graph's private pool
# (core/host_drawn.cpp): the StepGraph tests (drop path with and without layer scale, the
# trainer's graphed runs against eager ones), then the smoke runs of dev/s36e.sh again.
# Pack: KEEP_NEW=0 dev/labbin-pack.sh; carry ["build/labpack", ".golden"].
NAME=s36g
source dev/labbin-lib.sh
timeout 200 $L/test_gpu --gtest_filter='*StepGraph*' > $R/sg.log 2>&1
grep -E "^\[  (FAILED|PASSED|SKIPPED|     OK|  RUN)|Failure|summary value|differ" $R/sg.log | grep -v "RUN" | head -30 | tee $OUT/stepgraph.txt
bash dev/s36e.sh 2>&1 | grep -vE "^\[[0-9:]+\] info: run folder" | tee $OUT/runs.txt
