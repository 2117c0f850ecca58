#!/usr/bin/env bash
# Dev use (device tool), twenty-ninth session's final call: GPU tests of the submitted tree, its
# final figures with timm beside them (final_call), and f32 taking the Haar kernels at one block a
# multiprocessor too (hg_f1: min_haar_blocks<float>() = 1, so 96/56/5's 28-wide level 0 as well)
# against the submitted two (hg_new): bench-layer fp32 at C = 96 and WTConvNeXt-T tf32.
# Pack: build hg_f1 with the constant changed, copy it to build/labbin, rebuild, dev/labbin-pack.sh.
# Carry ["build/labpack", ".golden"].
NAME=s29e
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
final_call hg_new; el final
for v in hg_new hg_f1 hg_new hg_f1; do
  timeout 40 $L/$v bench-layer --kernel 5 --precision fp32 --channels 96 > $R/f1-$v.txt 2>&1
  echo "== $v"; grep -E "^(wtconv fused|ours dw 7)" $R/f1-$v.txt
done | tee $OUT/f1-layer.txt
for v in hg_new hg_f1; do model_rows tf32 wtconvnext_tiny $v; done 2>&1 |
  grep -E "^==|^wtconvnext_tiny.* tf32 +128 " | cut -c1-120 | tee $OUT/f1-model.txt
el done
