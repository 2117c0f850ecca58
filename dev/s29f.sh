#!/usr/bin/env bash
# Dev use (device tool), twenty-ninth session: the GPU tests of the tree where f32 takes the Haar
# kernels wherever they fit (its programs), the memory test's peaks, bench-layer fp32 once.
# Pack: dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s29f
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
grep "workspace peak" $R/ops.log
layer_rows fp32 hg_new | tee $OUT/bench-layer.txt
el done
