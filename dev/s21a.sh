#!/usr/bin/env bash
# Dev use (device tool), twenty-first session's first call, prebuilt binaries (dev/labbin-pack.sh):
#   hg_base  commit c7a56fd's program (the twentieth session's review commit: fold_level_tap,
#            kUnfoldWarps; never run on a GPU before this call);
#   hg_new   c7a56fd with dev/s20/synth-unrolled-tail.patch (the synthesis's column loop as whole
#            periods of K pairs plus an unrolled tail).
# ab_call with fp32 (GPU tests of hg_new's tree: c7a56fd's kernels but the synthesis), then the
# stall reasons of the whole-plane kernels at 384/14/3 (hg_base).
NAME=s21a
source dev/labbin-lib.sh
ab_call fp32
ab_summary
sed -n 9,36p $OUT/seq-96.txt; tail -1 $OUT/seq-96.txt
timeout 120 $NCU --clock-control none -k regex:plane_ -c 3 --metrics "$STALLS" --csv --page raw \
  $L/hg_base bench-layer --precision bf16 --channels 384 --warmup 0 --iters 1 > $R/stalls.csv 2> $R/stalls.err
python3 dev/ncu_stalls.py $R/stalls.csv | tee $OUT/plane-stalls.txt
el done
