#!/usr/bin/env bash
# Fifty-second session: the session's tree on the GPU (its changes are host code: validate's
# columns, the ranks' start-up warnings), then final_call on an H200 if one comes (issue 11's fp32
# figure is asked on the H200). Pack: build the tree, dev/labbin-pack.sh; carry ["build/labpack",
# ".golden", ".fmnist"]. ~200 s after the start.
NAME=s52a
source dev/labbin-lib.sh
tests_first
final_call hg_new
