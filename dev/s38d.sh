#!/usr/bin/env bash
# Thirty-eighth session: the window column loops' remainder unrolled (for_window_columns,
# staged_rows.cuh) in conv_staged_kernel, wgrad_staged_kernel, haar_conv_kernel and
# haar_wgrad_kernel, as the staged synthesis already had it, against the tree before (hg_base):
# GPU tests of the change, bench-layer bf16, fp32, bf16 (short: the session's device time was
# nearly spent). Pack: cp build/haargrad build/labbin/hg_base before building the
# change, then KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s38d
source dev/labbin-lib.sh
gpu_tests; el tests; cat $OUT/tests.txt
layer_rows bf16 hg_base hg_new | grep -E "^==|wtconv fused|ours dw 7"
el bf16
layer_rows fp32 hg_base hg_new | grep -E "^==|wtconv fused|ours dw 7"
el fp32
layer_rows bf16 hg_base hg_new | grep -E "^==|wtconv fused|ours dw 7"
el done
