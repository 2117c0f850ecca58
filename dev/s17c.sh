#!/usr/bin/env bash
# Dev use (device tool), seventeenth session's third call, prebuilt binaries (carry
# ["build/labpack", ".golden"], packed as dev/s16d.sh's header says):
#   hg_base  commit aa0fa51's program (the session's start);
#   hg_occ   + the occupancy patch (s17a's hg_occ);
#   hg_new   the tree: + the forward's plane storage picked by occupancy (f32 unless bf16 fits more
#            blocks), the whole-plane reduction with several slices' loads in flight, the unfold
#            kernels' loads in chunks; test_ops and test_gpu are this tree's (built with
#            HAARGRAD_NATIVE, as the EMA fix needs).
# bench-layer bf16 A/B/C twice, fp32 for base and new; the bf16 model bench of all three; GPU
# tests; timm's peer bench; fp32 / tf32 model bench of hg_new; Nsight sequences at 96 and 384.
# Logs stay in /tmp; $OUT gets a few files (the device tool returns a limited count).
set -uo pipefail
T0=$(date +%s)
el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
ok() { grep -E "^\[  (FAILED|PASSED)|FAILED  \]" "$1" | head -8; }
[ -x /tmp/labbin/hg_new ] && cmp -s /tmp/labbin/hg_new <(tar -C /tmp -xJOf build/labpack/labbin.tar.xz labbin/hg_new) ||
  tar -C /tmp -xJf build/labpack/labbin.tar.xz
export LD_LIBRARY_PATH=/tmp/labbin:/usr/local/cuda/lib64:/usr/local/cuda/lib
export HAARGRAD_GOLDEN_DIR=$PWD/.golden
L=/tmp/labbin; R=/tmp/s17c; mkdir -p $R
el unpacked
{
for round in 1 2; do
  for v in hg_base hg_occ hg_new; do
    timeout 40 $L/$v bench-layer --kernel 5 --precision bf16 > $R/bl-$v-bf16-$round.txt 2>&1
    echo "== $v bf16 $round"; grep -E "^(wtconv fused|ours dw 7)" $R/bl-$v-bf16-$round.txt
  done
done
for v in hg_base hg_new; do
  timeout 40 $L/$v bench-layer --kernel 5 --precision fp32 > $R/bl-$v-fp32.txt 2>&1
  echo "== $v fp32"; grep -E "^(wtconv fused|ours dw 7)" $R/bl-$v-fp32.txt
done
grep -h "I/O model\|launches" $R/bl-hg_new-bf16-1.txt | head -6
} > $OUT/bench-layer.txt 2>&1
el bench-layer
{
for v in hg_base hg_occ hg_new hg_base hg_new; do
  m=wtconvnext_tiny; [ $v = hg_base ] && m=convnext_tiny,wtconvnext_tiny
  timeout 60 $L/$v bench --device cuda --batch 128 --img-size 224 --precision bf16 --models $m \
    --wtconv fused --steps 10 --warmup 3 > $R/bench-$v.txt 2>&1
  echo "== $v"; grep -A8 "^model  " $R/bench-$v.txt | cut -c1-170 | grep -v "^$" | head -8
done
} > $OUT/model.txt 2>&1
el model
timeout 100 $L/test_gpu > $R/gpu.log 2>&1
timeout 150 $L/test_ops --gtest_filter='*Gpu*:*Cuda*' > $R/ops.log 2>&1
{ echo "== test_gpu"; ok $R/gpu.log; echo "== test_ops GPU cases"; ok $R/ops.log
  grep -A6 "Failure" $R/gpu.log $R/ops.log | head -30; } > $OUT/tests.txt
el tests
timeout 120 python3 scripts/peer-bench.py --steps 10 --warmup 3 --modes amp_bf16,compile_bf16 \
  --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1
el peer
{ for p in fp32 tf32; do
  timeout 55 $L/hg_new bench --device cuda --batch 128 --img-size 224 --precision $p \
    --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 > $R/bench-$p.txt 2>&1
  echo "== $p"; grep -A8 "^model  " $R/bench-$p.txt | cut -c1-170 | grep -v "^$" | head -8
done; } > $OUT/model-fp32-tf32.txt 2>&1
el fp32-tf32
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
for c in 96 384; do
  [ $(( $(date +%s) - T0 )) -gt 480 ] && { echo "no time for ncu $c"; continue; }
  timeout 60 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
    $L/hg_new bench-layer --precision bf16 --channels $c --warmup 0 --iters 1 > $R/ncu-$c.csv 2> /dev/null
  python3 dev/ncu_seq.py $R/ncu-$c.csv 0 100000 > $OUT/seq-$c.txt; tail -1 $OUT/seq-$c.txt
done
el ncu
cat $OUT/bench-layer.txt $OUT/model.txt; tail -4 $OUT/peer.txt | cut -c1-200; cat $OUT/model-fp32-tf32.txt $OUT/tests.txt
