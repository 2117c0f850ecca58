#!/usr/bin/env bash
# Dev use (device tool), nineteenth session's sixth call, prebuilt binaries (carry
# ["build/labpack", ".golden"], packed as dev/s16d.sh's header says):
#   hg_base  commit ad38458 (synth_staged by column pairs, staging walks);
#   hg_new   the tree: wgrad_staged pipelined (bf16: two buffers, cp.async), grid = resident blocks;
#            test_ops and test_gpu are this tree's. Nsight details of synth_staged (new).
# GPU tests first; bench-layer bf16 base/new twice; the bf16 model bench; Nsight
# sequence at 96 of hg_new.
set -uo pipefail
T0=$(date +%s)
el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
ok() { grep -E "^\[  (FAILED|PASSED)|FAILED  \]" "$1" | head -8; }
[ -x /tmp/labbin/hg_new ] && cmp -s /tmp/labbin/hg_new <(tar -C /tmp -xJOf build/labpack/labbin.tar.xz labbin/hg_new) ||
  tar -C /tmp -xJf build/labpack/labbin.tar.xz
export LD_LIBRARY_PATH=/tmp/labbin:/usr/local/cuda/lib64:/usr/local/cuda/lib
export HAARGRAD_GOLDEN_DIR=$PWD/.golden
L=/tmp/labbin; R=/tmp/s18f; mkdir -p $R
el unpacked
timeout 100 $L/test_gpu > $R/gpu.log 2>&1
timeout 150 $L/test_ops --gtest_filter='*Gpu*:*Cuda*' > $R/ops.log 2>&1
{ echo "== test_gpu"; ok $R/gpu.log; echo "== test_ops GPU cases"; ok $R/ops.log
  grep -A6 "Failure" $R/gpu.log $R/ops.log | head -40; } > $OUT/tests.txt
el tests
{
for round in 1 2; do
  for v in hg_base hg_new; do
    timeout 40 $L/$v bench-layer --kernel 5 --precision bf16 > $R/bl-$v-bf16-$round.txt 2>&1
    echo "== $v bf16 $round"; grep -E "^(wtconv fused|ours dw 7)" $R/bl-$v-bf16-$round.txt
  done
done
for v in hg_base hg_new; do
  timeout 40 $L/$v bench-layer --kernel 5 --precision fp32 > $R/bl-$v-fp32.txt 2>&1
  echo "== $v fp32"; grep -E "^(wtconv fused|ours dw 7)" $R/bl-$v-fp32.txt
done
} > $OUT/bench-layer.txt 2>&1
el bench-layer
{
for v in hg_base hg_new hg_base hg_new; do
  timeout 60 $L/$v bench --device cuda --batch 128 --img-size 224 --precision bf16 \
    --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 > $R/bench-$v.txt 2>&1
  echo "== $v"; grep -A8 "^model  " $R/bench-$v.txt | cut -c1-170 | grep -v "^$" | head -8
done
} > $OUT/model.txt 2>&1
el model
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
for c in 96; do
  timeout 60 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
    $L/hg_new bench-layer --precision bf16 --channels $c --warmup 0 --iters 1 > $R/ncu-$c.csv 2> /dev/null
  python3 dev/ncu_seq.py $R/ncu-$c.csv 0 100000 > $OUT/seq-$c.txt; tail -1 $OUT/seq-$c.txt
done
el ncu
M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active'
timeout 60 $NCU --clock-control none -k regex:"wgrad_staged" -c 3 --metrics "$M" --csv --page raw \
  $L/hg_new bench-layer --precision bf16 --channels 96 --warmup 0 --iters 1 > $R/st.csv 2> $R/st.err
python3 dev/ncu_stalls.py $R/st.csv > $OUT/ncu-synth.txt 2>&1
el ncu-synth
cat $OUT/ncu-synth.txt $OUT/tests.txt $OUT/bench-layer.txt $OUT/model.txt
