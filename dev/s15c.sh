#!/usr/bin/env bash
# (A record: the dev/s15/*.head, *.6b4f628 and *.wgrad-all-taps copies it reads are in commit 6850514;
# the all-taps variant is dev/s15/plane-wgrad-all-taps.patch against the product since.)
# Dev use (device tool), fifteenth session's third call: the whole-plane backward's all-taps
# weight-gradient sums again (dev/s15a.sh measured them slower; Nsight in dev/s15b.sh found the
# plane kernel itself 6% faster, so the loss was the reduction's base-plane sum, now with 32 loads
# in flight) against the tested 6b4f628 (/tmp/b0, built beside the tests):
#   GPU tests of the candidate; bench-layer bf16 / fp32 and the bf16 model bench of both;
#   Nsight Compute of plane_backward and plane_wgrad_reduce at 384/14/3 bf16, both;
#   the model bench in fp32 and tf32 while budget is left.
set -uo pipefail
BUDGET=${BUDGET:-260}
source dev/run-lib.sh
el built
variant_tree /tmp/src0
cp dev/s15/wtconv_plane.cuh.6b4f628 /tmp/src0/kernels/cuda/wtconv_plane.cuh
cp dev/s15/wtconv_fused.cu.6b4f628 /tmp/src0/kernels/cuda/wtconv_fused.cu
( build_program /tmp/src0 /tmp/b0 ) > /tmp/variants.log 2>&1 &
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
for v in b b0; do
  timeout 60 $NCU --clock-control none --kernel-name regex:"plane_backward|plane_wgrad_reduce" --launch-count 2 \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread \
    /tmp/$v/haargrad bench-layer --precision bf16 --channels 384 --kernel 5 --warmup 0 --iters 1 > $OUT/ncu-$v.txt 2>&1
  echo "== ncu $v"; grep -E "^\s+(gpu__|smsp__|launch__)|^  [a-z_]*plane_[a-z_]*kernel" $OUT/ncu-$v.txt | sed -E 's/ +/ /g' | cut -c1-120
done
el ncu
model_bench_in fp32 tf32
el done
