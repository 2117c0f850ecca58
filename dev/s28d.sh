#!/usr/bin/env bash
# Dev use (device tool), twenty-eighth session's final call: the submitted commit's GPU tests and
# its final figures with timm's peer bench in the same call (final_call of dev/labbin-lib.sh).
# Pack: KEEP_NEW=0 dev/labbin-pack.sh with only hg_new in build/labbin. Carry ["build/labpack", ".golden"].
NAME=s28d
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
grep -h "workspace peak" $R/ops.log
final_call hg_new
el done
