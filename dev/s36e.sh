#!/usr/bin/env bash
# Thirty-sixth session: why the smoke model's graphed run leaves the eager one once its blocks
# matter (ls_init_value 1): summary rows of eager / graphed runs with and without drop path, and
# the graphed one with gemm_autotune off. Pack: KEEP_NEW=0 dev/labbin-pack.sh; carry ["build/labpack"].
NAME=s36e
source dev/labbin-lib.sh
run() {  # NAME ARGS...: train the smoke config on the GPU, print its summary's losses and top-1
  local name=$1; shift
  timeout 60 $L/hg_new train configs/smoke.yaml --device cuda --workers 0 --epochs 3 \
    --ls_init_value 1 --output /tmp/s36e/$name "$@" > $R/$name.log 2>&1
  echo "== $name $*"; cut -d, -f1-4 /tmp/s36e/$name/smoke/summary.csv | tail -3
  grep -iE "graph|op by op" $R/$name.log | head -2
}
{
  run eager0 --drop_path 0 --cuda_graph false
  run graph0 --drop_path 0 --cuda_graph true
  run eager5 --drop_path 0.5 --cuda_graph false
  run graph5 --drop_path 0.5 --cuda_graph true
  run graph5_noat --drop_path 0.5 --cuda_graph true --gemm_autotune false
  run eager5_noat --drop_path 0.5 --cuda_graph false --gemm_autotune false
} 2>&1 | tee $OUT/runs.txt
