#!/usr/bin/env bash
# Dev use (device tool), twenty-ninth session's review: the GPU tests of the reviewed tree (the
# path queries' shared check) and bench-layer bf16 once (its path notes).
# Pack: dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s29h
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
grep "workspace peak" $R/ops.log
IO=1 layer_rows bf16 hg_new
