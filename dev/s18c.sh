#!/usr/bin/env bash
# Dev use (device tool), nineteenth session's third call, prebuilt binaries (carry
# ["build/labpack", ".golden"], packed as dev/s16d.sh's header says):
#   hg_new   commit f111399 (synth_staged stages t_0 and R);
#   hg_labA  the same with synth_staged's column loop skipped (staging only);
#   hg_labB  the same with synth_staged's staging skipped (the column loop over stale shared memory).
# Nsight launch sequences of the three at 96 (synth_staged's time split into staging and compute),
# and the stall reasons of the staged kernels of hg_new (dev/ncu_stalls.py).
# (Rewritten onto dev/labbin-lib.sh after the call ran: the same programs and options; the
# printed labels and log names differ a little.)
NAME=s18c
source dev/labbin-lib.sh
for v in hg_new hg_labA hg_labB; do
  timeout 60 $NCU --clock-control none -k regex:synth_staged --metrics gpu__time_duration.sum --csv \
    --page raw $L/$v "${NCU_LAYER[@]}" > $R/seq-$v.csv 2> /dev/null
  echo "== $v"; python3 dev/ncu_seq.py $R/seq-$v.csv 0 100000
done > $OUT/split.txt
el split
{ ncu_stalls hg_new "synth_staged|haar_conv|wgrad_staged" 6; ncu_stalls hg_new "conv_staged|backward_data" 3; } \
  > $OUT/stalls.txt 2>&1
el stalls
cat $OUT/split.txt $OUT/stalls.txt
