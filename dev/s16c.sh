#!/usr/bin/env bash
# (A record: the dev/s16/ copies it reads are in commit 9148c2b, removed after the call.)
# Dev use (device tool), sixteenth session's third (final) call. Three builds in one call:
#   /tmp/b   the tree: the split path's level tail (f32 and bf16) and the whole-plane reduction
#            with its slices split over the block's warps; the plane kernels' outputs back to
#            restrict parameters (s16b's struct parameter cost ~10 us a 14 x 14 forward);
#   /tmp/b1  HEAD + that reduction only (dev/s16/reduce);  /tmp/b0  HEAD (dev/s16/head);
#            both with HEAD's app/bench_layer.cpp and kernels/wtconv.h (dev/s16/head-other).
# GPU tests of /tmp/b; bench-layer bf16 / fp32 and the bf16 model bench of all three; timm's
# peer bench (amp bf16, compile bf16); the fp32 / tf32 model bench of /tmp/b.
set -uo pipefail
BUDGET=${BUDGET:-430}
source dev/run-lib.sh
el built
for v in 0 1; do
  variant_tree /tmp/src$v
  src=dev/s16/head; [ $v = 1 ] && src=dev/s16/reduce
  cp $src/* /tmp/src$v/kernels/cuda/
  cp dev/s16/head-other/bench_layer.cpp /tmp/src$v/app/
  cp dev/s16/head-other/wtconv.h /tmp/src$v/kernels/
done
( build_program /tmp/src0 /tmp/b0; build_program /tmp/src1 /tmp/b1 ) > /tmp/variants.log 2>&1 &
VP=$!
gpu_tests > /tmp/tests.txt 2>&1
grep -hE "LevelTail|37_W41|29_W27" $OUT/ops.log | grep -E "^\[ +(OK|FAILED)" | cut -c1-110 | head -10
el tests
wait $VP; head -c 1500 /tmp/variants.log
el variants
bench_layer_ab b0 b1 b
el bench-layer
model_bench_ab b0 b1 b
el bench
timeout 120 python3 scripts/peer-bench.py --steps 10 --warmup 3 --modes amp_bf16,compile_bf16 --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1; tail -4 $OUT/peer.txt | cut -c1-160
el peer
model_bench_in fp32 tf32
el done
echo "== tests (/tmp/b)"; cat /tmp/tests.txt
grep -h "I/O model" $OUT/bl-b-bf16.txt | head -4
