#!/usr/bin/env bash
# Dev use (device tool), nineteenth session's last call, prebuilt binaries (carry
# ["build/labpack", ".golden"], packed as dev/s16d.sh's header says):
#   hg_base  commit cc88faf's program;
#   hg_new   the tree: haar_conv_kernel with 8 level rows a block (4 pairs, each warp two of them;
#            the halo's Haar 1.5x instead of 2x) and its phase 1 stepped by StageWalk.
# GPU tests first (this tree's), then bench-layer bf16 and the WTConvNeXt-T bf16 bench, base / new.
set -uo pipefail
T0=$(date +%s)
el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
ok() { grep -E "^\[  (FAILED|PASSED)|FAILED  \]" "$1" | head -8; }
tar -C /tmp -xJf build/labpack/labbin.tar.xz
export LD_LIBRARY_PATH=/tmp/labbin:/usr/local/cuda/lib64:/usr/local/cuda/lib
export HAARGRAD_GOLDEN_DIR=$PWD/.golden
L=/tmp/labbin; R=/tmp/s18i; mkdir -p $R
timeout 100 $L/test_gpu > $R/gpu.log 2>&1
timeout 100 $L/test_ops --gtest_filter='*Gpu*:*Cuda*' > $R/ops.log 2>&1
{ echo "== test_gpu"; ok $R/gpu.log; echo "== test_ops GPU cases"; ok $R/ops.log
  grep -A6 "Failure" $R/gpu.log $R/ops.log | head -30; } > $OUT/tests.txt
el tests; cat $OUT/tests.txt
for v in hg_base hg_new; do
  timeout 30 $L/$v bench-layer --kernel 5 --precision bf16 > $R/bl-$v.txt 2>&1
  echo "== $v"; grep -E "^(wtconv fused|ours dw 7)" $R/bl-$v.txt
done | tee $OUT/bench-layer.txt
el bench-layer
for v in hg_base hg_new; do
  timeout 30 $L/$v bench --device cuda --batch 128 --img-size 224 --precision bf16 \
    --models wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 > $R/bench-$v.txt 2>&1
  echo "== $v"; grep -E "^wtconvnext_tiny .*bf16 +128" $R/bench-$v.txt | cut -c1-140
done | tee $OUT/model.txt
el model
