#!/usr/bin/env bash
# Dev use (device tool), twenty-sixth session: (1) the tensor-core depthwise lab with its variants 3
# .. 7 (two channels a mma, read straight from NHWC; dev/dwconv_tc/README.md); (2) the submitted
# commit's GPU tests and final figures on the H200 with timm's peer bench in the same call (the
# twenty-fifth session's were on an H100).
# Pack: dev/labbin-pack.sh, then cp build/dev/dwconv_tc/dwconv_tc_lab build/labbin/ (stripped) and
# tar -C build -cJf build/labpack/labbin.tar.xz labbin. Carry ["build/labpack", ".golden"].
NAME=s26a
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
timeout 120 $L/dwconv_tc_lab 20 > $OUT/lab.txt 2>&1; echo "lab rc $?"; el lab
grep -E "FAILED|check v[3-7]" $OUT/lab.txt | head -40; grep -E "^time|     v[3-7]|backward data:" $OUT/lab.txt
[ "${LAB_ONLY:-0}" = 1 ] && exit 0
gpu_tests; el tests; cat $OUT/tests.txt
final_call hg_new
