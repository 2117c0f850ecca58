#!/usr/bin/env bash
# Dev use (device tool), twenty-eighth session: A/B of hg_base (1ae963e) against hg_new (the split
# backward's level weight gradients from haar_wgrad_kernel, bf16): GPU tests of the new tree (the
# memory test's printed peaks), bench-layer bf16 twice, both models' bf16 twice, and hg_new's
# launch sequences at B = 128 (C = 96, 192).
# Pack: cp the baseline to build/labbin/hg_base, build, KEEP_NEW=0 dev/labbin-pack.sh.
# Carry ["build/labpack", ".golden"].
NAME=s28b
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
ab_call
ab_summary
grep -h "workspace peak" $R/ops.log $R/gpu.log
for c in 96 192; do
  timeout 90 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
    $L/hg_new bench-layer --precision bf16 --batch 128 --channels $c --warmup 0 --iters 1 \
    > $R/ncu128-$c.csv 2> /dev/null
  python3 dev/ncu_seq.py $R/ncu128-$c.csv 0 100000 > $OUT/seq128-$c.txt
  sed -n 15,34p $OUT/seq128-$c.txt
done
el done
