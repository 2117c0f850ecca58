#!/usr/bin/env bash
# (A record: the dev/s15/*.head, *.6b4f628 and *.wgrad-all-taps copies it reads are in commit 6850514;
# the all-taps variant is dev/s15/plane-wgrad-all-taps.patch against the product since.)
# Dev use (device tool), fifteenth session's first call:
#  1. the tensor-core depthwise lab (v1, v2, backward data, w1), carried prebuilt as build/labpack
#     (dev/dwconv_tc/README.md);
#  2. the product with the whole-plane backward's new weight-gradient sums (all K x K taps per item,
#     the base plane split in row chunks) and kPlaneTQ = 4: build, GPU tests;
#  3. the same-call before: HEAD's two files (dev/s15/*.head) in /tmp/b0, and the new sums with
#     kPlaneTQ = 2 in /tmp/b1 (built beside the tests), then bench-layer and the model bench of each.
set -uo pipefail
tar -C /tmp -xJf build/labpack/labbin.tar.xz
LD_LIBRARY_PATH=/tmp/labbin:/usr/local/cuda/lib64:/usr/local/cuda/lib timeout 60 /tmp/labbin/dwconv_tc_lab 20 > $OUT/lab.txt 2>&1
echo "lab rc $?"; cut -c1-160 $OUT/lab.txt | grep -v "^check.* ok$" | tail -40; echo "checks ok: $(grep -c "^check.* ok$" $OUT/lab.txt)"
source dev/run-lib.sh
el built
variant_tree /tmp/src0
cp dev/s15/wtconv_plane.cuh.head /tmp/src0/kernels/cuda/wtconv_plane.cuh
cp dev/s15/wtconv_fused.cu.head /tmp/src0/kernels/cuda/wtconv_fused.cu
variant_tree /tmp/src1
sed -i 's/constexpr int kPlaneTQ = 4;/constexpr int kPlaneTQ = 2;/' /tmp/src1/kernels/cuda/wtconv_plane.cuh
echo "src1 TQ=2: $(grep -c 'kPlaneTQ = 2;' /tmp/src1/kernels/cuda/wtconv_plane.cuh)"
( build_program /tmp/src0 /tmp/b0 & build_program /tmp/src1 /tmp/b1 & wait ) > /tmp/variants.log 2>&1 &
VP=$!
gpu_tests
el tests
wait $VP; cat /tmp/variants.log
el variants
for v in b0 b1 b; do
  for p in bf16 fp32; do
    [ $v = b1 ] && [ $p = fp32 ] && continue
    timeout 45 /tmp/$v/haargrad bench-layer --kernel 5 --precision $p > $OUT/bl-$v-$p.txt 2>&1
    echo "== $v $p"; grep -E "^(wtconv fused|ours dw 7)" $OUT/bl-$v-$p.txt
  done
done
el bench-layer
for v in b0 b1 b; do
  m=wtconvnext_tiny; [ $v = b ] && m=convnext_tiny,wtconvnext_tiny
  timeout 60 /tmp/$v/haargrad bench --device cuda --batch 128 --img-size 224 --precision bf16 --models $m --wtconv fused --steps 10 --warmup 3 --output $OUT/bench-$v.json > $OUT/bench-$v.txt 2>&1
  echo "== $v"; grep -A30 "^model  " $OUT/bench-$v.txt | cut -c1-170 | grep -v "^$\|^timed\|^syncs\|replayed" | head -6
done
el done
