#!/usr/bin/env bash
# Dev use (device tool), seventeenth session's first call, prebuilt binaries (carry
# ["build/labpack", ".golden"]; packed as dev/s16d.sh's header says, with five binaries):
#   hg_base  commit aa0fa51's program (HEAD);
#   hg_ov    HEAD + dev/s16/plane-backward-overlay.patch rebased (the 14 x 14 backward's region B
#            shared by x's pyramid and the cascade's filters and rec buffers, bf16 level taps);
#   hg_occ   HEAD + dev/s16/plane-occupancy.patch rebased (that backward, and the forward's planes
#            and level taps in T);
#   hg_lpt   hg_occ + the backward's weight-gradient items dealt to the warps longest first
#            (PlaneGeom::first / items); test_ops and test_gpu are hg_lpt's tree.
# bench-layer bf16 A/B/C twice, fp32 once; the bf16 model bench of all three; Nsight Compute's launch
# sequence of hg_lpt's bench-layer at 96/56 and 192/28 bf16; then the GPU tests.
set -uo pipefail
T0=$(date +%s)
el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
ok() { grep -E "^\[  (FAILED|PASSED)|FAILED  \]" "$1" | head -8; }
tar -C /tmp -xJf build/labpack/labbin.tar.xz
export LD_LIBRARY_PATH=/tmp/labbin:/usr/local/cuda/lib64:/usr/local/cuda/lib
export HAARGRAD_GOLDEN_DIR=$PWD/.golden
L=/tmp/labbin
el unpacked
for round in 1 2; do
  for v in hg_base hg_ov hg_occ hg_lpt; do
    timeout 40 $L/$v bench-layer --kernel 5 --precision bf16 > $OUT/bl-$v-bf16-$round.txt 2>&1
    echo "== $v bf16 $round"; grep -E "^(wtconv fused|ours dw 7)" $OUT/bl-$v-bf16-$round.txt
  done
done
el bench-layer-bf16
for v in hg_base hg_lpt; do
  timeout 40 $L/$v bench-layer --kernel 5 --precision fp32 > $OUT/bl-$v-fp32.txt 2>&1
  echo "== $v fp32"; grep -E "^(wtconv fused|ours dw 7)" $OUT/bl-$v-fp32.txt
done
el bench-layer-fp32
for v in hg_base hg_ov hg_occ hg_lpt hg_base hg_lpt; do
  m=wtconvnext_tiny; [ $v = hg_base ] && m=convnext_tiny,wtconvnext_tiny
  timeout 60 $L/$v bench --device cuda --batch 128 --img-size 224 --precision bf16 --models $m \
    --wtconv fused --steps 10 --warmup 3 > $OUT/bench-$v.txt 2>&1
  echo "== $v"; grep -A3 "^model  " $OUT/bench-$v.txt | head -3 | cut -c1-130
done
el model
timeout 100 $L/test_gpu > $OUT/gpu.log 2>&1
timeout 150 $L/test_ops --gtest_filter='*Gpu*:*Cuda*' > $OUT/ops.log 2>&1
el tests
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
for c in 96 192; do
  [ $(( $(date +%s) - T0 )) -gt 430 ] && { echo "no time for ncu $c"; continue; }
  timeout 120 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
    $L/hg_lpt bench-layer --precision bf16 --channels $c --warmup 0 --iters 1 > $OUT/ncu-$c.csv 2> $OUT/ncu-$c.err
  python3 dev/ncu_seq.py $OUT/ncu-$c.csv 0 100000 > $OUT/seq-$c.txt; tail -1 $OUT/seq-$c.txt
done
el ncu
echo "== tests (hg_lpt's tree)"; ok $OUT/gpu.log; ok $OUT/ops.log
grep -A4 "Failure" $OUT/gpu.log $OUT/ops.log | head -20
