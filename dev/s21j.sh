#!/usr/bin/env bash
# Dev use (device tool), twenty-first session's final call, prebuilt binaries of the submitted tree
# (hg_new = commit 7191ff6's program, whose GPU tests and op harness passed in dev/s21i.sh, so not
# rerun): bench-layer bf16 and fp32, the model bench in bf16, fp32, tf32, bf16, and timm's peer
# bench in the same call (final_call).
NAME=s21j
source dev/labbin-lib.sh
final_call hg_new
grep -E "graph of|train " $OUT/model.txt | cut -c1-150 | head -12
