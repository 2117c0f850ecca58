#!/usr/bin/env bash
# Dev use (device tool), seventh session: the whole-plane WTConv kernels (wtconv_plane.cuh):
# WTConv GPU tests, bench-layer with the plane path on and off (HG_WTCONV_PLANE=0), model bench.
# (HG_WTCONV_PLANE existed at commit dd51a8d only; the project now reads no such switch.)
set -uo pipefail
source dev/run-lib.sh
el built
timeout 200 /tmp/b/tests/test_ops --gtest_filter='WTConvGpu*:Shapes/WTConvGpu*:Gpu/OpDevice.*wtconv*' > $OUT/ops-wt.log 2>&1; ok $OUT/ops-wt.log
grep -E "^\[ RUN|FAILED|Failure|error" $OUT/ops-wt.log | grep -B1 -A3 "Failure" | head -40
grep -c "^\[       OK" $OUT/ops-wt.log
el tests
for p in bf16 fp32; do for pl in 0 256; do echo "== $p plane=$pl"; HG_WTCONV_PLANE=$pl timeout 60 $HG bench-layer --kernel 5 --precision $p > $OUT/bl-$p-$pl.txt 2>&1; grep -E "^(impl|wtconv fused|ours dw 7)|error" $OUT/bl-$p-$pl.txt | cut -c1-150; done; done
el bench-layer
for pl in 0 256; do echo "== plane=$pl"; HG_WTCONV_PLANE=$pl timeout 80 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16,fp32 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 6 --warmup 2 2>&1 | grep -A5 "^model  " | head -6 | cut -c1-150; done
el done
