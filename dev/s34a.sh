#!/usr/bin/env bash
# Dev use (device tool): the ConvNeXt block under drop path as gelu_linear_scaled + one residual
# pass (add_scaled_samples) instead of gelu_linear, layer_scale, drop_path and residual_add.
# GPU tests of the new and changed ops (the op harness's device cases, the fused-block and bf16
# kernel tests, test_gpu's graphed step with drop path), then the training configs' own step
# (`bench CONFIG`: drop path 0.1, mixup, label smoothing) of hg_base (the session's start) against
# hg_new, bf16 twice and tf32 once. Pack: cp the base's build/haargrad to build/labbin/hg_base, build,
# KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s34a
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 120 $L/test_ops --gtest_filter='*add_scaled*:*gelu_linear*:*scale_samples*:*drop_path*:*DropPath*:*FusedBlock*:*GpuBf16Kernels*:*layer_scale*:*cross_entropy*:*soft_target*:*SoftTarget*:*CrossEntropy*' \
  > $R/ops.log 2>&1
echo "test_ops rc $?"; ok $R/ops.log; grep -A6 "Failure" $R/ops.log | head -20
timeout 100 $L/test_gpu > $R/gpu.log 2>&1
echo "test_gpu rc $?"; ok $R/gpu.log; grep -A6 "Failure" $R/gpu.log | head -20
el tests
cfg_row() {  # V CONFIG PRECISION
  timeout 80 $L/$1 bench configs/$2.yaml --device cuda --precision $3 --steps 10 --warmup 3 \
    > $R/cfg-$1-$2-$3.txt 2>&1
  echo "== $1 $2 $3"; grep -E "^(conv|wtconv)next_tiny" $R/cfg-$1-$2-$3.txt | cut -c1-160
  grep -iE "error|what" $R/cfg-$1-$2-$3.txt | head -3
}
for round in 1 2; do
  for m in convnext_tiny wtconvnext_tiny; do
    for v in hg_base hg_new; do cfg_row $v $m bf16; done
  done
done 2>&1 | tee $OUT/cfg.txt
for m in convnext_tiny wtconvnext_tiny; do for v in hg_base hg_new; do cfg_row $v $m tf32; done; done \
  2>&1 | tee -a $OUT/cfg.txt
el bench
grep -B2 -A12 "^model " $R/cfg-hg_new-convnext_tiny-bf16.txt | head -30
timeout 40 $L/hg_new bench-layer --precision tf32 --channels 96 > $R/bl-tf32.txt 2>&1; echo "bench-layer tf32 rc $?"
grep -E "^(wtconv fused|ours dw 7)" $R/bl-tf32.txt
