#!/usr/bin/env bash
# Dev use (device tool), twelfth session: the WTConv split path's levels >= 1 on a second stream
# (kernels/cuda/overlap.h). Builds the tree (/tmp/b) and the same tree with wtconv_fused.cu as
# before it (dev/s12d-base/, /tmp/b0); GPU tests on the new one (with the Overlap tests and a graph
# replay of the split path in bf16); bench-layer bf16 / fp32 and the bf16 model bench on both (A/B
# in one call); then s12c's issue-13 experiment (the trainer graphed with decode: nvjpeg).
# The base files it copied (dev/s12d-base/) were removed after the run; they are in commit 7132007 (wtconv_fused.cu as it was: f88f5dd).
set -uo pipefail
rm -rf /tmp/base && mkdir -p /tmp/base && tar --exclude=./.git -cf - . | tar -C /tmp/base -xf -
cp dev/s12d-base/wtconv_fused.cu /tmp/base/kernels/cuda/
( cd /tmp/base && B=/tmp/b0 bash dev/gpu-build.sh ) > /tmp/b0-build.log 2>&1 &
BP=$!
source dev/run-lib.sh
jpeg_folder /tmp/jf8 320 14
el built
wait $BP; tail -3 /tmp/b0-build.log
el "base built"
gpu_tests
el tests
for p in bf16 fp32; do for b in b0 b; do
  echo "== $b $p"
  timeout 60 /tmp/$b/haargrad bench-layer --precision $p 2>&1 | grep -E "^wtconv fused"
done; done
el bench-layer
for b in b0 b; do
  echo "== $b"
  timeout 90 /tmp/$b/haargrad bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 > $OUT/bench-$b.txt 2>&1; grep -A4 "^model  " $OUT/bench-$b.txt | cut -c1-120 | grep -v "^$\|^timed\|^syncs" | head -3
  grep -E "wtconvnext_tiny.*train" $OUT/bench-$b.txt | tail -1
done
el bench
folder_ready /tmp/jf8
jpeg_vs_synth /tmp/jf8
grep -h "training step:\|JPEG decoder thread\|CUDA graph" $OUT/train-*.log | cut -c12-220 | head -12
el done
