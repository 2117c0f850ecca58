#!/usr/bin/env bash
# Dev use (device tool), nineteenth session's third call, prebuilt binaries (carry
# ["build/labpack", ".golden"], packed as dev/s16d.sh's header says):
#   hg_new   commit f111399 (synth_staged stages t_0 and R);
#   hg_labA  the same with synth_staged's column loop skipped (staging only);
#   hg_labB  the same with synth_staged's staging skipped (the column loop over stale shared memory).
# Nsight launch sequences of the three at 96 (synth_staged's time split into staging and compute),
# and the stall reasons of the staged kernels of hg_new (dev/ncu_stalls.py).
set -uo pipefail
T0=$(date +%s)
el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
[ -x /tmp/labbin/hg_new ] && cmp -s /tmp/labbin/hg_new <(tar -C /tmp -xJOf build/labpack/labbin.tar.xz labbin/hg_new) ||
  tar -C /tmp -xJf build/labpack/labbin.tar.xz
export LD_LIBRARY_PATH=/tmp/labbin:/usr/local/cuda/lib64:/usr/local/cuda/lib
L=/tmp/labbin; R=/tmp/s18c; mkdir -p $R
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
el unpacked
for v in hg_new hg_labA hg_labB; do
  timeout 60 $NCU --clock-control none -k regex:synth_staged --metrics gpu__time_duration.sum --csv --page raw \
    $L/$v bench-layer --precision bf16 --channels 96 --warmup 0 --iters 1 > $R/seq-$v.csv 2> /dev/null
  echo "== $v"; python3 dev/ncu_seq.py $R/seq-$v.csv 0 100000
done > $OUT/split.txt
el split
M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active'
timeout 120 $NCU --clock-control none -k regex:"synth_staged|haar_conv|wgrad_staged" -c 6 --metrics "$M" --csv --page raw \
  $L/hg_new bench-layer --precision bf16 --channels 96 --warmup 0 --iters 1 > $R/st-wt.csv 2> $R/st-wt.err
timeout 60 $NCU --clock-control none -k regex:"conv_staged|backward_data" -c 3 --metrics "$M" --csv --page raw \
  $L/hg_new bench-layer --precision bf16 --channels 96 --warmup 0 --iters 1 > $R/st-dw.csv 2> $R/st-dw.err
{ python3 dev/ncu_stalls.py $R/st-wt.csv; python3 dev/ncu_stalls.py $R/st-dw.csv; tail -3 $R/st-wt.err $R/st-dw.err; } > $OUT/stalls.txt 2>&1
el stalls
cat $OUT/split.txt $OUT/stalls.txt
