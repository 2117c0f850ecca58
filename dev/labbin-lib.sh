#!/usr/bin/env bash
# Sourced by the device scripts (dev/README.md), from the repository root, with NAME set (the logs go
# to /tmp/$NAME): the programs are prebuilt here and carried packed (carry ["build/labpack",
# ".golden"]; packed by dev/labbin-pack.sh). Unpacks them into /tmp/labbin unless its
# hg_new is the packed one already (a warm machine), and defines what the scripts share:
#   el MSG                    seconds since the start, and MSG
#   ok LOG                    the gtest PASSED / FAILED lines of LOG
#   L, R, NCU                 the programs' folder, the logs' folder, Nsight Compute
#   gpu_tests                 test_gpu and test_ops' GPU / CUDA cases into $OUT/tests.txt
#   tests_first               a device script's opening: the card's name, gpu_tests printed, and
#                             with TESTS_ONLY=1 the script's end
#   layer_rows P V...         bench-layer K = 5 in precision P with each program V: WTConv's and
#                             our 7x7's rows (and the I/O model's lines when IO=1)
#   model_rows P MODELS V...  the model bench (B = 128, 224 px, fused WTConv) in precision P with
#                             each program V: each model's line and its memory table
#   ncu_seq V                 Nsight's launch sequence of V's bench-layer bf16 at C = 96
#                             (dev/ncu_seq.py) into $OUT/seq-96.txt; ncu_seq_at V C at C
#   final_call V              a session's final figures: bench-layer bf16 / fp32, both models in
#                             bf16, fp32, tf32, bf16, and timm's peer bench in the same call
#   config_rows V             the 224 px configs' own step (drop path) in bf16 into $OUT/cfg.txt
#   fm_run EXP S [ARGS...]    hg_new's `train configs/fashion_mnist.yaml` on CUDA in bf16 (.fmnist
#                             carried) as experiment EXP with ARGS, S seconds at most, into
#                             $OUT/EXP.log; its exit status
#   fm_summary EXP            EXP's summary.csv, printed and kept as $OUT/EXP_summary.csv
#   fm_case EXP S TITLE RE [ARGS...]
#                             fm_run, then "== TITLE (rc N)", the log's lines matching RE, the
#                             summary (fm_summary) when there is one, and the time so far
#   fm_main S                 the main job in bf16 (issue 10: >= 90% top-1) as fm_case fm_bf16
#   timm_check, sched_check   scripts/timm-check.py, scripts/timm-sched-check.py with hg_new
#   config_breakdown          `bench configs/convnext_tiny.yaml --precision bf16 --breakdown`
#   ncu_stalls V REGEX N      the stall reasons (dev/ncu_stalls.py) of the first N launches whose
#                             kernel matches REGEX in V's bench-layer bf16 at C = 96
#   ab_summary                ab_call's results, printed
#   ab_call_at C              ab_call fp32, then hg_new's launch sequence at C channels too, and
#                             the summary with both sequences' lines
#   seq_each C V...           each program V's launch sequence at C channels into
#                             $OUT/seq-C-V.txt
#   ab_rows V...              GPU tests (hg_new's tree), then each program V's bench-layer bf16
#                             twice and fp32 once, and both models' bf16 twice; $OUT/tests.txt,
#                             bench-layer.txt, model.txt
#   ab_call [fp32]            one call's A/B of hg_base against hg_new: GPU tests (hg_new's tree),
#                             bench-layer bf16 twice (and fp32 once), both models' bf16 bench twice,
#                             then hg_new's launch sequence; $OUT/tests.txt, bench-layer.txt,
#                             model.txt, seq-96.txt
set -uo pipefail
T0=$(date +%s)
el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
ok() { grep -E "^\[  (FAILED|PASSED|SKIPPED)|FAILED  \]" "$1" | head -12; }  # a skip on the GPU is news
[ -x /tmp/labbin/hg_new ] &&
  cmp -s /tmp/labbin/hg_new <(tar -C /tmp -xJOf build/labpack/labbin.tar.xz labbin/hg_new) ||
  tar -C /tmp -xJf build/labpack/labbin.tar.xz
export LD_LIBRARY_PATH=/tmp/labbin:/usr/local/cuda/lib64:/usr/local/cuda/lib
export HAARGRAD_GOLDEN_DIR=$PWD/.golden
L=/tmp/labbin; R=/tmp/$NAME; mkdir -p "$R"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)

gpu_tests() {
  timeout 100 $L/test_gpu > $R/gpu.log 2>&1
  timeout 150 $L/test_ops --gtest_filter='*Gpu*:*Cuda*' > $R/ops.log 2>&1
  { echo "== test_gpu"; ok $R/gpu.log; echo "== test_ops GPU cases"; ok $R/ops.log
    grep -A6 "Failure" $R/gpu.log $R/ops.log | head -40; } > $OUT/tests.txt
}

tests_first() {
  nvidia-smi --query-gpu=name --format=csv,noheader
  gpu_tests
  el tests
  cat $OUT/tests.txt
  if [ "${TESTS_ONLY:-0}" = 1 ]; then exit 0; fi
}

layer_rows() {
  local p=$1 v; shift
  for v in "$@"; do
    timeout 40 $L/$v bench-layer --kernel 5 --precision $p > $R/bl-$v-$p.txt 2>&1
    echo "== $v $p"; grep -E "^(wtconv fused|ours dw 7)" $R/bl-$v-$p.txt
    [ "${IO:-0}" = 1 ] && grep "I/O model" $R/bl-$v-$p.txt
  done
}

model_rows() {
  local p=$1 models=$2 v; shift 2
  for v in "$@"; do
    timeout 60 $L/$v bench --device cuda --batch 128 --img-size 224 --precision $p --models $models \
      --wtconv fused --steps 10 --warmup 3 > $R/bench-$v-$p.txt 2>&1
    echo "== $v $p"; grep -A14 "^model  " $R/bench-$v-$p.txt | cut -c1-170 | grep -v "^$" | head -14
  done
}

NCU_LAYER=(bench-layer --precision bf16 --channels 96 --warmup 0 --iters 1)
ncu_seq() { ncu_seq_at "$1" 96; tail -1 $OUT/seq-96.txt; }
ncu_seq_at() {  # V C: the launch sequence of V's bench-layer bf16 at C channels -> $OUT/seq-C.txt
  timeout 60 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
    $L/$1 bench-layer --precision bf16 --channels $2 --warmup 0 --iters 1 > $R/ncu-$2.csv 2> /dev/null
  python3 dev/ncu_seq.py $R/ncu-$2.csv 0 100000 > $OUT/seq-$2.txt
}

final_call() {  # V: bench-layer bf16 and fp32 (I/O model), the models in bf16, fp32, tf32, bf16,
                # timm's peer bench, all in this call; $OUT/bench-layer.txt, model.txt, peer.txt
  { IO=1 layer_rows bf16 $1; IO=1 layer_rows fp32 $1; } > $OUT/bench-layer.txt 2>&1
  el bench-layer
  for p in bf16 fp32 tf32 bf16; do model_rows $p convnext_tiny,wtconvnext_tiny $1; done \
    > $OUT/model.txt 2>&1
  el model
  timeout 120 python3 scripts/peer-bench.py --steps 10 --warmup 3 --modes amp_bf16,compile_bf16 \
    --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1
  el peer
  grep -E "^==|wtconv fused|ours dw 7" $OUT/bench-layer.txt; grep -E "^==|128 " $OUT/model.txt | cut -c1-140
  tail -3 $OUT/peer.txt | cut -c1-160
}

config_rows() {  # V: the 224 px configs' own step (drop path 0.1) in bf16 -> $OUT/cfg.txt
  local m
  for m in convnext_tiny wtconvnext_tiny; do
    timeout 80 $L/$1 bench configs/$m.yaml --device cuda --precision bf16 --steps 10 --warmup 3 \
      > $R/cfg-$m.txt 2>&1
    echo "== config $m"; grep -E "^(conv|wtconv)next_tiny" $R/cfg-$m.txt | cut -c1-160
  done 2>&1 | tee $OUT/cfg.txt
}

STALLS='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active'
ncu_stalls() {
  timeout 120 $NCU --clock-control none -k regex:"$2" -c $3 --metrics "$STALLS" --csv --page raw \
    $L/$1 "${NCU_LAYER[@]}" > $R/stalls.csv 2> $R/stalls.err
  python3 dev/ncu_stalls.py $R/stalls.csv
}

ab_summary() {  # what ab_call wrote: the tests, the bench-layer rows, the models' bf16 lines
  cat $OUT/tests.txt $OUT/bench-layer.txt
  grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
}

seq_each() {  # C V...: each V's launch sequence at C channels -> $OUT/seq-C-V.txt
  local c=$1 v; shift
  for v in "$@"; do ncu_seq_at $v $c; mv $OUT/seq-$c.txt $OUT/seq-$c-$v.txt; done
}

ab_call_at() {  # C: ab_call fp32 and hg_new's launch sequence at C channels, then the summary
  ab_call fp32
  ncu_seq_at hg_new $1
  el seq$1
  ab_summary
  sed -n 1,40p $OUT/seq-96.txt | tail -32; sed -n 9,16p $OUT/seq-$1.txt
}

ab_call() {
  gpu_tests; el tests
  { for round in 1 2; do layer_rows bf16 hg_base hg_new; done
    [ "${1:-}" = fp32 ] && layer_rows fp32 hg_base hg_new; } > $OUT/bench-layer.txt 2>&1
  el bench-layer
  for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_new; done \
    > $OUT/model.txt 2>&1
  el model
  ncu_seq hg_new; el ncu
}

ab_rows() {
  gpu_tests; el tests
  { for round in 1 2; do layer_rows bf16 "$@"; done; layer_rows fp32 "$@"; } \
    > $OUT/bench-layer.txt 2>&1
  el bench-layer
  for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny "$@"; done > $OUT/model.txt 2>&1
  el model
}

fm_run() {
  local exp=$1 secs=$2; shift 2
  timeout "$secs" $L/hg_new train configs/fashion_mnist.yaml --data-dir "$PWD/.fmnist" \
    --output /tmp/runs --workers 8 --plain --device cuda --precision bf16 --experiment "$exp" \
    "$@" > "$OUT/$exp.log" 2>&1
}

fm_summary() { tee "$OUT/$1_summary.csv" < "/tmp/runs/$1/summary.csv"; }

fm_case() {
  local exp=$1 secs=$2 title=$3 regex=$4 rc; shift 4
  fm_run "$exp" "$secs" "$@"; rc=$?
  echo "== $title (rc $rc)"
  grep -E "$regex" "$OUT/$exp.log" | tail -8 | cut -c1-220
  [ -f "/tmp/runs/$exp/summary.csv" ] && fm_summary "$exp"
  el "$exp"
}

fm_main() { fm_case fm_bf16 "$1" "bf16, the main job" "training step:|epoch 6/6|best|error|warn"; }

timm_check() {
  timeout 300 python3 scripts/timm-check.py --haargrad $L/hg_new --out $OUT/timm-check.json \
    > $OUT/timm-check.txt 2>&1
  echo "== timm-check (rc $?)"
  grep -vE "^\[|^ *$" $OUT/timm-check.txt | tail -8 | cut -c1-220
  el timm-check
}

sched_check() {
  timeout 120 python3 scripts/timm-sched-check.py --haargrad $L/hg_new \
    --out $OUT/sched-check.json > $OUT/sched-check.txt 2>&1
  echo "== timm-sched-check (rc $?)"; tail -3 $OUT/sched-check.txt
  el sched-check
}

config_breakdown() {
  timeout 200 $L/hg_new bench configs/convnext_tiny.yaml --device cuda --precision bf16 \
    --breakdown > $OUT/breakdown.txt 2>&1
  echo "== bench CONFIG --breakdown, drop path 0.1 (rc $?)"
  grep -A24 "breakdown of one training step" $OUT/breakdown.txt | cut -c1-160
  el breakdown
}
