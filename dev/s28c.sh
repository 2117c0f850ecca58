#!/usr/bin/env bash
# Dev use (device tool), twenty-eighth session: three binaries in one call: hg_base (1ae963e),
# hg_w (a9216f3: haar_wgrad_kernel) and hg_new (haar_grads_kernel: the level gradient and the
# weight gradient in one launch over G's coefficients). GPU tests of hg_new's tree, bench-layer
# bf16 twice, both models' bf16 twice, hg_new's launch sequence at B = 128, C = 96.
# Pack: build/labbin/hg_base and hg_w in place, build, KEEP_NEW=0 dev/labbin-pack.sh.
# Carry ["build/labpack", ".golden"].
NAME=s28c
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
grep -h "workspace peak" $R/ops.log
{ for round in 1 2; do layer_rows bf16 hg_base hg_w hg_new; done; } > $OUT/bench-layer.txt 2>&1
grep -E "^==|wtconv fused" $OUT/bench-layer.txt
el bench-layer
for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_w hg_new; done \
  > $OUT/model.txt 2>&1
grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
el model
timeout 90 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
  $L/hg_new bench-layer --precision bf16 --batch 128 --channels 96 --warmup 0 --iters 1 \
  > $R/ncu128-96.csv 2> /dev/null
python3 dev/ncu_seq.py $R/ncu128-96.csv 0 100000 > $OUT/seq128-96.txt
sed -n 15,32p $OUT/seq128-96.txt
el done
