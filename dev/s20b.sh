#!/usr/bin/env bash
# Dev use (device tool), twentieth session's second call, prebuilt binaries (dev/labbin-pack.sh):
#   hg_base  commit e390270's program;
#   hg_new   the tree: haar_conv_kernel's phase 1 with 4 items a thread in flight (kBatch 2 -> 4).
# GPU tests (the tree's), bench-layer bf16 A/B twice, the models' bf16 bench A/B, then Nsight's
# launch sequence of hg_base's bench-layer bf16 at C = 192, 384, 768 (the small kernels there).
# Outcome: no change (0.645 -> 0.644 / 0.648 ms at 96/56/5); kBatch 4 was not committed.
NAME=s20b
source dev/labbin-lib.sh
ab_call
for c in 192 384 768; do
  timeout 60 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
    $L/hg_base bench-layer --precision bf16 --channels $c --warmup 0 --iters 1 > $R/ncu-$c.csv 2> /dev/null
  python3 dev/ncu_seq.py $R/ncu-$c.csv 0 100000 > $OUT/seq-$c.txt
done
el seqs
cat $OUT/tests.txt $OUT/bench-layer.txt; grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
tail -1 $OUT/seq-96.txt
