#!/usr/bin/env bash
# Fifty-first session, the last call: the final tree's GPU tests (the recovery checkpoint's weight
# check and the CUDA WTConv's int32 size check are new host code on the GPU path), then final_call
# with scripts/peer-bench.py measuring timm's memory as bench measures ours (peaks after the
# warm-up, the cache emptied between inference and training). Pack: build the tree,
# dev/labbin-pack.sh; carry ["build/labpack", ".golden", ".fmnist"]. ~200 s after the start.
NAME=s51a
source dev/labbin-lib.sh
tests_first
final_call hg_new
