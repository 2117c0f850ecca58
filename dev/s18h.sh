#!/usr/bin/env bash
# Dev use (device tool), nineteenth session's last call, prebuilt binaries of the tree (carry
# ["build/labpack", ".golden"]; hg_new, test_ops, test_gpu, packed as dev/s16d.sh's header says):
# commit 6a735c3 + haar_conv_takes (try_haar_conv's checks, also behind the new
# kernels::cuda::wtconv_haar_conv_levels) and bench-layer's I/O model counting the fused Haar +
# level conv. GPU tests; bench-layer bf16 and fp32 (the I/O lines).
set -uo pipefail
T0=$(date +%s)
el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
ok() { grep -E "^\[  (FAILED|PASSED)|FAILED  \]" "$1" | head -8; }
tar -C /tmp -xJf build/labpack/labbin.tar.xz
export LD_LIBRARY_PATH=/tmp/labbin:/usr/local/cuda/lib64:/usr/local/cuda/lib
export HAARGRAD_GOLDEN_DIR=$PWD/.golden
L=/tmp/labbin; R=/tmp/s18h; mkdir -p $R
timeout 100 $L/test_gpu > $R/gpu.log 2>&1
timeout 150 $L/test_ops --gtest_filter='*Gpu*:*Cuda*' > $R/ops.log 2>&1
{ echo "== test_gpu"; ok $R/gpu.log; echo "== test_ops GPU cases"; ok $R/ops.log
  grep -A6 "Failure" $R/gpu.log $R/ops.log | head -30; } > $OUT/tests.txt
el tests
{ for p in bf16 fp32; do
  timeout 40 $L/hg_new bench-layer --kernel 5 --precision $p > $R/bl-$p.txt 2>&1
  echo "== $p"; grep -E "^(wtconv fused|ours dw 7)|I/O model" $R/bl-$p.txt
done; } > $OUT/bench-layer.txt 2>&1
el bench-layer
cat $OUT/tests.txt $OUT/bench-layer.txt
