#!/usr/bin/env bash
# (A record: the patch it reverses was dev/s15/plane-reduce-split-slices.patch, applied in
# commit 9148c2b; this call's reduction failed its launch, see docs/perf-notes.md.)
# Dev use (device tool), sixteenth session's first call: the whole-plane reduction with the slices
# split over the block's 8 warps (dev/s15/plane-reduce-split-slices.patch, applied to the tree:
# /tmp/b) against HEAD without it (/tmp/b0, built beside the tests):
#   GPU tests of the candidate; bench-layer bf16 / fp32 and the bf16 model bench of both;
#   Nsight Compute of plane_wgrad_reduce and plane_backward at 384/14/3 bf16, both.
set -uo pipefail
BUDGET=${BUDGET:-420}
source dev/run-lib.sh
el built
variant_tree /tmp/src0
( cd /tmp/src0 && patch -R -p1 -s < dev/s15/plane-reduce-split-slices.patch && grep -c plane_reduce_smem kernels/cuda/wtconv_plane.cuh )
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
    --metrics gpu__time_duration.sum,launch__registers_per_thread \
    /tmp/$v/haargrad bench-layer --precision bf16 --channels 384 --kernel 5 --warmup 0 --iters 1 > $OUT/ncu-$v.txt 2>&1
  echo "== ncu $v"; grep -E "^\s+(gpu__|launch__)|^  [a-z_]*plane_[a-z_]*kernel" $OUT/ncu-$v.txt | sed -E 's/ +/ /g' | cut -c1-120
done
el ncu
model_bench_in fp32 tf32
el done
