#!/usr/bin/env bash
# Thirty-eighth session, the last call: the submitted tree's GPU tests (with the padded
# GpuCropResize cases of crop_pct > 1), dev/s38a.sh's A/B in short (the cluster reduction with
# clusters of two, hg_c2, against the tree, bench-layer bf16 twice), the final figures beside timm
# (final_call), the configs' own step, then the instruction mix of bench-layer bf16 at C = 96.
# Pack: hg_c2 = a build of dev/s38/plane-backward-clusters.patch with kMaxPlaneCluster = 2 in
# build/labbin, then KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s38c
source dev/labbin-lib.sh
tests_first
grep -cE "^\[       OK \] GpuCropResize" $R/gpu.log
for round in 1 2; do layer_rows bf16 hg_new hg_c2; done > $OUT/c2.txt 2>&1
el c2
grep -E "^==|wtconv fused" $OUT/c2.txt
final_call hg_new
config_rows hg_new
el cfg
MIX='gpu__time_duration.sum,smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_global_st.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active'
timeout 100 $NCU --clock-control none --metrics "$MIX" --csv --page raw \
  $L/hg_new bench-layer --precision bf16 --channels 96 --warmup 0 --iters 1 > $OUT/mix-96.csv 2> $R/mix.err
el mix
