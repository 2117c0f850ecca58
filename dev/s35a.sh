#!/usr/bin/env bash
# Dev use (device tool): the thirty-fifth session's tree on a GPU: test_gpu and every op harness
# GPU / CUDA case (the level-grid refactor, the reference order's scale gradients on the
# depthwise weight gradient, the harness cases moved from the per-op tests), then the final
# figures of its program (final_call: bench-layer bf16 / fp32, both models in bf16, fp32, tf32,
# bf16 by name, timm's peer bench) and the 224 px configs' own step in bf16.
# Pack: KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s35a
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests
el tests
cat $OUT/tests.txt
[ "${TESTS_ONLY:-0}" = 1 ] && exit 0
final_call hg_new
for m in convnext_tiny wtconvnext_tiny; do
  timeout 80 $L/hg_new bench configs/$m.yaml --device cuda --precision bf16 --steps 10 --warmup 3 \
    > $R/cfg-$m.txt 2>&1
  echo "== config $m"; grep -E "^(conv|wtconv)next_tiny" $R/cfg-$m.txt | cut -c1-160
done 2>&1 | tee $OUT/cfg.txt
el cfg
