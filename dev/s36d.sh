#!/usr/bin/env bash
# Thirty-sixth session: the tree's GPU tests (gemm_autotune's GPU tests, the GPU tests the test
# audit fixed), both models with cuBLASLt's algorithms timed (default) against the heuristic's
# first (--gemm-autotune false) in bf16 twice, tf32 and fp32 once, then the session's final
# figures beside timm (final_call) and the configs' own step.
# Pack: KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s36d
source dev/labbin-lib.sh
tests_first
ab() {  # P: both models with and without autotuning
  for tune in true false; do
    timeout 90 $L/hg_new bench --device cuda --batch 128 --img-size 224 --precision $1 \
      --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 \
      --gemm-autotune $tune > $R/ab-$1-$tune.txt 2>&1
    echo "== gemm_autotune $tune $1"
    grep -E "^(conv|wtconv)next_tiny.* $1 +128 " $R/ab-$1-$tune.txt | cut -c1-120
  done
}
{ ab bf16; ab bf16; ab tf32; ab fp32; } 2>&1 | tee $OUT/autotune.txt
el autotune
final_call hg_new
config_rows hg_new
el cfg
