#!/usr/bin/env bash
# Dev use (device tool), twenty-seventh session: the dense-operator WTConv lab (dev/wtconv_dense).
# Pack: cp build/dev/wtconv_dense/wtconv_dense_lab build/labbin/ (stripped), dev/labbin-pack.sh.
# Carry ["build/labpack"].
NAME=s27a
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 300 $L/wtconv_dense_lab ${REPS:-20} > $OUT/dense.txt 2>&1; echo "lab rc $?"; el lab
cat $OUT/dense.txt
