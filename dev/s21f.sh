#!/usr/bin/env bash
# Dev use (device tool), twenty-first session's final call, prebuilt binaries of the submitted tree
# (carry ["build/labpack", ".golden"]; hg_new, test_ops, test_gpu packed by dev/labbin-pack.sh):
# commit b5c3c8d (the deferred leaf-gradient copies flushed at 8 MiB; dev/s21e.sh measured them at
# 32 MiB). GPU tests and the op harness's GPU cases, then bench-layer bf16 and fp32, the model
# bench in bf16, fp32, tf32, bf16, and timm's peer bench in the same call (final_call).
NAME=s21f
source dev/labbin-lib.sh
gpu_tests; el tests
cat $OUT/tests.txt
final_call hg_new
grep -E "graph of|train " $OUT/model.txt | cut -c1-150 | head -12
