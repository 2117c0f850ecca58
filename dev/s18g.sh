#!/usr/bin/env bash
# Dev use (device tool), nineteenth session's final call, prebuilt binaries of the submitted tree
# (carry ["build/labpack", ".golden"]; hg_new, test_ops, test_gpu, packed as dev/s16d.sh's header
# says): commit 6a735c3 (test_gpu and the op harness passed on it in dev/s18f.sh, so not rerun).
# bench-layer bf16 and fp32; the model bench in bf16 (twice), fp32
# and tf32; timm's peer bench in the same call. $OUT gets a few files.
set -uo pipefail
T0=$(date +%s)
el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
ok() { grep -E "^\[  (FAILED|PASSED)|FAILED  \]" "$1" | head -8; }
tar -C /tmp -xJf build/labpack/labbin.tar.xz
export LD_LIBRARY_PATH=/tmp/labbin:/usr/local/cuda/lib64:/usr/local/cuda/lib
export HAARGRAD_GOLDEN_DIR=$PWD/.golden
L=/tmp/labbin; R=/tmp/s18g; mkdir -p $R
{ for p in bf16 fp32; do
  timeout 40 $L/hg_new bench-layer --kernel 5 --precision $p > $R/bl-$p.txt 2>&1
  echo "== $p"; grep -E "^(impl|wtconv|ours dw 7)" $R/bl-$p.txt; grep "I/O model" $R/bl-$p.txt
done; } > $OUT/bench-layer.txt 2>&1
el bench-layer
{ for p in bf16 fp32 tf32 bf16; do
  timeout 60 $L/hg_new bench --device cuda --batch 128 --img-size 224 --precision $p \
    --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 > $R/bench-$p.txt 2>&1
  echo "== $p"; grep -A14 "^model  " $R/bench-$p.txt | cut -c1-170 | grep -v "^$" | head -14
done; } > $OUT/model.txt 2>&1
el model
timeout 120 python3 scripts/peer-bench.py --steps 10 --warmup 3 --modes amp_bf16,compile_bf16 \
  --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1
el peer
grep -E "^==|wtconv fused|ours dw 7" $OUT/bench-layer.txt; grep -E "^==|128 " $OUT/model.txt | cut -c1-140
tail -3 $OUT/peer.txt | cut -c1-160
