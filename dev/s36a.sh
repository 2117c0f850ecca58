#!/usr/bin/env bash
# Thirty-sixth session: the GELU-in-GEMM lab (dev/gelu_gemm) against the product's path, then
# Nsight Compute's stall reasons and throughputs of each lab kernel at stage 1 (NCU=1).
set -uo pipefail
NAME=s36a
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
el lab
/tmp/labbin/gelu_gemm_lab "${REPS:-20}" 2>&1 | tee $OUT/lab.txt
if [ "${NCU_RUN:-1}" = 1 ]; then
  M="$STALLS,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors.sum,dram__bytes.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"
  for k in fwd_kernel fwd2_kernel dgrad_kernel dgrad2_kernel wgrad_kernel; do
    el "ncu $k"
    timeout 100 $NCU --clock-control none -k regex:"$k" -c 1 --metrics "$M" --csv --page raw \
      /tmp/labbin/gelu_gemm_lab 1 quick > $OUT/ncu-$k.csv 2> $OUT/ncu-$k.err
    python3 dev/ncu_stalls.py $OUT/ncu-$k.csv 2>&1 | tail -25
  done
fi
el done
