#!/usr/bin/env bash
# Dev use (device tool), twenty-eighth session's review: the GPU tests of the review commits
# (ll_band in wtconv_fused.cu) and the dense lab's GPU checks after its apply kernels were shared
# (task_products). Pack: wtconv_dense_lab in build/labbin, KEEP_NEW=0 dev/labbin-pack.sh.
# Carry ["build/labpack", ".golden"].
NAME=s28g
source dev/labbin-lib.sh
gpu_tests; el tests; cat $OUT/tests.txt
timeout 60 $L/wtconv_dense_lab 3 > $OUT/dense.txt 2>&1; echo "lab rc $?"
grep -iE "check|fail|ok" $OUT/dense.txt | head -20
el done
