#!/usr/bin/env bash
# Dev use (device tool), twentieth session's third call, prebuilt binaries (dev/labbin-pack.sh):
#   hg_base  commit e390270's program;
#   hg_new   the tree: the whole-plane backward's weight-gradient items dealt to the warps longest
#            first (PlaneSched), its column loop unrolled by K; every fold of a pass in one launch
#            (fold_kernel).
# ab_call (GPU tests of the tree, bench-layer bf16 and fp32 A/B, both models' bf16 bench A/B,
# hg_new's launch sequence at C = 96), then hg_new's launch sequence at C = 384.
# Outcome: the schedule and the unroll changed nothing (plane backward 122.0 -> 121.8 us) and
# were not committed; the one-launch fold is part of commit 1d4eaf4.
NAME=s20c
source dev/labbin-lib.sh
ab_call fp32
timeout 60 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
  $L/hg_new bench-layer --precision bf16 --channels 384 --warmup 0 --iters 1 > $R/ncu-384.csv 2> /dev/null
python3 dev/ncu_seq.py $R/ncu-384.csv 0 100000 > $OUT/seq-384.txt
el seq384
cat $OUT/tests.txt $OUT/bench-layer.txt; grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
sed -n 1,40p $OUT/seq-96.txt | tail -32; sed -n 9,16p $OUT/seq-384.txt
