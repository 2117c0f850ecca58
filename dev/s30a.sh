#!/usr/bin/env bash
# Dev use (device tool), thirtieth session: the f32 whole-plane backward reading x's level-0 plane
# from global memory (two blocks a multiprocessor at 14 x 14 instead of one) against the session's
# start (hg_base = 06d2d7a, whose host-side check ce8a6b8 had not run on a GPU: the tests here are
# the new tree's). Then Nsight's launch sequences of one training step (B = 64) in fp32 at C = 96
# and 384 and in bf16 at 384, to see where f32 loses against bf16.
# Pack: build 06d2d7a (or the commit to compare against), cp build/haargrad build/labbin/hg_base,
# git apply dev/s30/plane-backward-x-global.patch, build, KEEP_NEW=0 dev/labbin-pack.sh.
# Carry ["build/labpack", ".golden"].
NAME=s30a
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
{ for round in 1 2; do layer_rows fp32 hg_base hg_new; done; layer_rows bf16 hg_base hg_new; } \
  > $OUT/bench-layer.txt 2>&1
el bench-layer; cat $OUT/bench-layer.txt
for round in 1 2; do for p in tf32 fp32; do model_rows $p convnext_tiny,wtconvnext_tiny hg_base hg_new; done; done \
  > $OUT/model.txt 2>&1
el model; grep -E "^==|_tiny.* (fp32|tf32) +128 " $OUT/model.txt | cut -c1-120
for pc in fp32:96 fp32:384 bf16:384; do
  p=${pc%:*}; c=${pc#*:}
  for v in hg_base hg_new; do
    timeout 90 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
      $L/$v bench-layer --precision $p --channels $c --warmup 0 --iters 1 > $R/ncu.csv 2> /dev/null
    python3 dev/ncu_seq.py $R/ncu.csv 0 100000 > $OUT/seq-$p-$c-$v.txt; tail -1 $OUT/seq-$p-$c-$v.txt
  done
done
el ncu
