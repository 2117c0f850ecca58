#!/usr/bin/env bash
# Dev use (device tool), twenty-ninth session: the submitted tree on a GPU: its GPU tests and its
# final figures with timm beside them (final_call of dev/labbin-lib.sh).
# Pack: dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s29g
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
grep "workspace peak" $R/ops.log
final_call hg_new; el final
