#!/usr/bin/env bash
# Dev use (device tool), seventh session: the plane kernels with staged filters (loads unrolled),
# row-pointer loads and f32 planes in the forward: GPU tests, bench-layer, model bench.
set -uo pipefail
source dev/run-lib.sh
el built
gpu_tests
grep -A4 "Failure" $OUT/ops.log | head -20
el tests
for p in bf16 fp32; do timeout 60 $HG bench-layer --kernel 5 --precision $p > $OUT/bl-$p.txt 2>&1; grep -E "^(impl|wtconv fused|ours dw 7)|error" $OUT/bl-$p.txt | cut -c1-150; done
el bench-layer
timeout 90 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16,fp32 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 6 --warmup 2 2>&1 | grep -A5 "^model  " | cut -c1-150
el done
