#!/usr/bin/env bash
# (A record: the dev/s15/*.head, *.6b4f628 and *.wgrad-all-taps copies it reads are in commit 6850514;
# the all-taps variant is dev/s15/plane-wgrad-all-taps.patch against the product since.)
# Dev use (device tool), fifteenth session's final call, on the submitted code (HEAD's whole-plane
# kernels with kPlaneTQ = 4, and the capture-lock test's warmup fixed):
#   GPU tests (test_gpu, the op harness's GPU cases);
#   bench-layer bf16 / fp32 and the bf16 model bench against the same tree with kPlaneTQ = 2
#   (/tmp/b0, built beside the tests: the same-call before);
#   Nsight Compute of the whole-plane backward at 384/14/3 bf16: the product's weight-gradient
#   sums against the all-taps variant measured slower in dev/s15a.sh (dev/s15/*.wgrad-all-taps,
#   /tmp/b1), to say why;
#   the model bench in fp32 and tf32 while budget is left.
set -uo pipefail
BUDGET=${BUDGET:-470}
source dev/run-lib.sh
el built
variant_tree /tmp/src0
sed -i 's/constexpr int kPlaneTQ = 4;/constexpr int kPlaneTQ = 2;/' /tmp/src0/kernels/cuda/wtconv_plane.cuh
echo "src0 TQ=2: $(grep -c 'kPlaneTQ = 2;' /tmp/src0/kernels/cuda/wtconv_plane.cuh)"
variant_tree /tmp/src1
cp dev/s15/wtconv_plane.cuh.wgrad-all-taps /tmp/src1/kernels/cuda/wtconv_plane.cuh
cp dev/s15/wtconv_fused.cu.wgrad-all-taps /tmp/src1/kernels/cuda/wtconv_fused.cu
( build_program /tmp/src0 /tmp/b0 & build_program /tmp/src1 /tmp/b1 & wait ) > /tmp/variants.log 2>&1 &
VP=$!
gpu_tests
el tests
wait $VP; cat /tmp/variants.log
el variants
bench_layer_ab b0 b
el bench-layer
model_bench_ab b0 b
el bench
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for v in b b1; do
  timeout 60 $NCU --clock-control none --kernel-name regex:plane_backward --launch-count 1 \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,smsp__average_warp_latency_issue_stalled_barrier,smsp__average_warp_latency_issue_stalled_short_scoreboard,smsp__average_warp_latency_issue_stalled_long_scoreboard,smsp__average_warp_latency_issue_stalled_wait,smsp__average_warp_latency_issue_stalled_math_pipe_throttle,smsp__average_warp_latency_issue_stalled_mio_throttle,smsp__average_warp_latency_issue_stalled_not_selected,smsp__average_warp_latency_issue_stalled_dispatch_stall,smsp__average_warp_latency_issue_stalled_no_instruction,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum \
    /tmp/$v/haargrad bench-layer --precision bf16 --channels 384 --kernel 5 --warmup 0 --iters 1 > $OUT/ncu-$v.txt 2>&1
  echo "== ncu $v"; grep -E "^\s+(gpu__|smsp__|sm__|launch__|l1tex__)" $OUT/ncu-$v.txt | sed -E 's/ +/ /g' | cut -c1-120
done
el ncu
model_bench_in fp32 tf32
el done
