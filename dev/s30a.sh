#!/usr/bin/env bash
# Dev use (device tool), thirtieth session (not run: no device was lent): the two f32 changes of
# dev/s30/ against their base, in one call: hg_new = plane-backward-x-global.patch (the f32
# whole-plane backward reading x's level-0 plane from global memory: two blocks a multiprocessor
# at 14 x 14 instead of one), hg_new2 (when packed) = that and haar-conv-wide-blocks.patch (16-warp
# haar_conv_kernel blocks where one block's tiles fill a multiprocessor: f32 at 96/56/5's level 0).
# The GPU tests are those of the tree with both patches. Then Nsight's launch sequences of one
# training step (B = 64) in fp32 at C = 96 and 384 and in bf16 at 384, to see where f32 loses
# against bf16 (no session has taken fp32 sequences since f32 took the Haar kernels).
# Pack: build the base (e.g. HEAD), cp build/haargrad build/labbin/hg_base; git apply
# dev/s30/plane-backward-x-global.patch, ninja -C build haargrad, cp build/haargrad
# build/labbin/hg_new; git apply dev/s30/haar-conv-wide-blocks.patch, ninja -C build haargrad
# test_gpu test_ops, cp build/haargrad build/labbin/hg_new2; KEEP_NEW=1 dev/labbin-pack.sh.
# Carry ["build/labpack", ".golden"].
NAME=s30a
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
V="hg_base hg_new"; [ -x $L/hg_new2 ] && V="$V hg_new2"
gpu_tests; el tests; cat $OUT/tests.txt
{ for round in 1 2; do layer_rows fp32 $V; done; layer_rows bf16 $V; } > $OUT/bench-layer.txt 2>&1
el bench-layer; cat $OUT/bench-layer.txt
for round in 1 2; do for p in tf32 fp32; do model_rows $p convnext_tiny,wtconvnext_tiny $V; done; done \
  > $OUT/model.txt 2>&1
el model; grep -E "^==|_tiny.* (fp32|tf32) +128 " $OUT/model.txt | cut -c1-120
for pc in fp32:96 fp32:384 bf16:384; do
  p=${pc%:*}; c=${pc#*:}
  for v in $V; do
    timeout 90 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
      $L/$v bench-layer --precision $p --channels $c --warmup 0 --iters 1 > $R/ncu.csv 2> /dev/null
    python3 dev/ncu_seq.py $R/ncu.csv 0 100000 > $OUT/seq-$p-$c-$v.txt; tail -1 $OUT/seq-$p-$c-$v.txt
  done
done
el ncu
