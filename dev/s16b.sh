#!/usr/bin/env bash
# (A record: the dev/s16/ copies it reads are in commit 9148c2b; this call's variant builds
# failed: their trees lacked HEAD's wtconv_vec.cuh, which dev/s16c.sh adds.)
# Dev use (device tool), sixteenth session's second call. Three builds in one call:
#   /tmp/b   the tree: the split path's level tail (levels from the first LL band of <= 256 pixels
#            on the whole-plane kernels; f32 and bf16) and the whole-plane reduction with its slices split over
#            the block's 8 warps (sums in dynamic shared memory: s16a's static array broke the
#            max-dynamic attribute);
#   /tmp/b1  HEAD + that reduction only (dev/s16/reduce);  /tmp/b0  HEAD (dev/s16/head).
# GPU tests of /tmp/b; bench-layer bf16 / fp32 and the bf16 model bench of all three; Nsight of
# the reduction at 384/14/3 bf16 on /tmp/b; the fp32 / tf32 model bench of /tmp/b, fp32 of /tmp/b0.
set -uo pipefail
BUDGET=${BUDGET:-480}
source dev/run-lib.sh
el built
for v in 0 1; do
  variant_tree /tmp/src$v
  src=dev/s16/head; [ $v = 1 ] && src=dev/s16/reduce
  cp $src/* /tmp/src$v/kernels/cuda/
done
( build_program /tmp/src0 /tmp/b0; build_program /tmp/src1 /tmp/b1 ) > /tmp/variants.log 2>&1 &
VP=$!
gpu_tests
grep -E "LevelTail|37_W41|29_W27" $OUT/ops.log | grep -E "OK|FAILED" | head -12
el tests
wait $VP; cat /tmp/variants.log
el variants
bench_layer_ab b0 b1 b
el bench-layer
model_bench_ab b0 b1 b
el bench
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 60 $NCU --clock-control none --kernel-name regex:"plane_backward|plane_wgrad_reduce" --launch-count 2 \
  --metrics gpu__time_duration.sum,launch__registers_per_thread \
  /tmp/b/haargrad bench-layer --precision bf16 --channels 384 --kernel 5 --warmup 0 --iters 1 > $OUT/ncu-b.txt 2>&1
grep -E "^\s+(gpu__|launch__)|^  [a-z_]*plane_[a-z_]*kernel" $OUT/ncu-b.txt | sed -E 's/ +/ /g' | cut -c1-120
el ncu
model_bench_in fp32 tf32
timeout 50 /tmp/b0/haargrad bench --device cuda --batch 128 --img-size 224 --precision fp32 --models wtconvnext_tiny \
  --wtconv fused --steps 10 --warmup 3 --output $OUT/bench-b0-fp32.json > $OUT/bench-b0-fp32.txt 2>&1
echo "== b0 fp32"; grep -A2 "^model  " $OUT/bench-b0-fp32.txt | head -2 | cut -c1-130
el done
