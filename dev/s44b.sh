#!/usr/bin/env bash
# Forty-fourth session, second call (short: ~500 s of device time were left): the submitted
# tree's GPU tests, then bench-layer bf16 and both models in bf16 and fp32 (no peer bench).
# Pack: build the tree, KEEP_NEW=0 dev/labbin-pack.sh with only hg_new in build/labbin;
# carry ["build/labpack", ".golden"].
NAME=s44b
source dev/labbin-lib.sh
tests_first
layer_rows bf16 hg_new > $OUT/bench-layer.txt 2>&1; el bench-layer; cat $OUT/bench-layer.txt
for p in bf16 fp32; do model_rows $p convnext_tiny,wtconvnext_tiny hg_new; done > $OUT/model.txt 2>&1
el model
grep -E "^==|128 " $OUT/model.txt | cut -c1-150
