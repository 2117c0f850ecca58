#!/usr/bin/env bash
# Dev use (device tool), fourteenth session: the tensor-core depthwise conv lab
# (dev/dwconv_tc/dw_tc.cu): checks against a CPU loop, then times it against the product's kernel.
# Builds only the lab target (and haargrad_lib) into /tmp/bl.
set -uo pipefail
D=$PWD/.deps/root/usr; export LD_LIBRARY_PATH=$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
T0=$(date +%s)
cmake -S . -B /tmp/bl -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHAARGRAD_CUDA=ON -DHAARGRAD_DEV=ON \
  -DBUILD_TESTING=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D -DCMAKE_INCLUDE_PATH=$D/include > /tmp/bl.log 2>&1
cmake --build /tmp/bl -j16 --target dwconv_tc_lab >> /tmp/bl.log 2>&1 || { grep -iE -A5 "error" /tmp/bl.log | head -40; exit 1; }
echo "[+$(( $(date +%s) - T0 ))s] built"
timeout 90 /tmp/bl/dev/dwconv_tc/dwconv_tc_lab 20; echo "rc $?"
echo "[+$(( $(date +%s) - T0 ))s] done"
