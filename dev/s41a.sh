#!/usr/bin/env bash
# Forty-first session, first call: the bf16 depthwise conv on tensor cores (conv_mma_kernel,
# kernels/cuda/depthwise_mma.cuh) against the tree before it (hg_base = 4a4d1ec): GPU tests of the
# new tree (with the fortieth session's untested reduce_slices loop and the new mma harness cases),
# bench-layer bf16 twice, both models' bf16 once, the launch sequences of both
# programs at C = 96 (conv_mma_kernel against conv_staged_kernel), and bench-layer's --output CSV /
# JSON files (the fortieth session's dev/s40d.sh check). Pack: KEEP_NEW=0 dev/labbin-pack.sh with
# build/labbin/hg_base; carry ["build/labpack", ".golden"].
NAME=s41a
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
# the quick figure first, so that a short call still brings it back
layer_rows bf16 hg_base hg_new > $OUT/bench-layer.txt 2>&1; el bench-layer
cat $OUT/bench-layer.txt
gpu_tests; el tests; cat $OUT/tests.txt
model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_new > $OUT/model.txt 2>&1
el model
grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
layer_rows bf16 hg_new hg_base > $OUT/bench-layer2.txt 2>&1; el bench-layer2
cat $OUT/bench-layer2.txt
seq_each 96 hg_new hg_base
el seq
for v in hg_new hg_base; do  # the depthwise kernels of the sequence (all of it in $OUT)
  echo "== launch sequence $v: depthwise kernels"
  grep -E "mma|conv_staged|wgrad_staged|reduce_slices" $OUT/seq-96-$v.txt | head -40
  tail -1 $OUT/seq-96-$v.txt
done
for f in rows.csv rows.json; do
  timeout 60 $L/hg_new bench-layer --precision bf16 --channels 96 --warmup 1 --iters 3 \
    --output $OUT/$f > $R/bl-$f.txt 2>&1
  echo "== $f (exit $?)"; head -c 400 $OUT/$f; echo
done
el done
