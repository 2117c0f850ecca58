#!/usr/bin/env bash
# Dev use (device tool), twenty-sixth session: the tensor-core depthwise lab with variants 8 and 9
# (v3 and v5 with the staging pipelined: two buffers, blocks walking 16-row strips).
# Pack: cp build/dev/dwconv_tc/dwconv_tc_lab build/labbin/ (stripped), then
# tar -C build -cJf build/labpack/labbin.tar.xz labbin. Carry ["build/labpack"].
NAME=s26b
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 120 $L/dwconv_tc_lab 20 > $OUT/lab.txt 2>&1; echo "lab rc $?"; el lab
grep -E "FAILED|check v[89]" $OUT/lab.txt | head -20
grep -E "^time|     v[35789]" $OUT/lab.txt
