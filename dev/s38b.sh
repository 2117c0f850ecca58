#!/usr/bin/env bash
# Thirty-eighth session: dev/s38a.sh's cluster reduction with clusters of two blocks instead of
# eight (dev/s38/plane-backward-clusters.patch with kMaxPlaneCluster = 2) against fdf51b8
# (hg_base): GPU tests, bench-layer bf16 twice, both models bf16 twice, launch sequences at C = 384
# and 768. Pack as dev/s38a.sh. Carry ["build/labpack", ".golden"].
NAME=s38b
source dev/labbin-lib.sh
ab_call
for c in 384 768; do ncu_seq_at hg_new $c; done
el seq
ab_summary
for c in 384 768; do echo "== seq $c"; sed -n 1,40p $OUT/seq-$c.txt | grep -E "plane_(back|wgrad)" | head -4; tail -1 $OUT/seq-$c.txt; done
# instruction mix of every launch of bench-layer bf16 at C = 96 (one iteration): the WTConv
# kernels against our 7x7's, for the next session's kernel work ($OUT/mix-96.csv)
MIX='gpu__time_duration.sum,smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_global_st.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active'
timeout 150 $NCU --clock-control none --metrics "$MIX" --csv --page raw \
  $L/hg_new bench-layer --precision bf16 --channels 96 --warmup 0 --iters 1 > $OUT/mix-96.csv 2> $R/mix.err
el mix
