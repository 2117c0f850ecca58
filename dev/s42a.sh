#!/usr/bin/env bash
# Forty-second session, first call: the bf16 depthwise forward / backward data on tensor cores
# with the rows staged as they are (cp.async, NHWC) and the A fragments formed from two 16-byte
# shared loads and byte permutes (no transposed staging: the forty-first session's kernels were
# bound by it, ~100 us whatever K). The weight gradient stays on CUDA cores here (the tensor-core
# one only with HG_S42_WGRAD_MMA=1). Against hg_base (4336bbe): bench-layer bf16 both orders, the
# launch sequences at C = 96, the GPU tests, both models in bf16. Pack: KEEP_NEW=0
# dev/labbin-pack.sh with build/labbin/hg_base; carry ["build/labpack", ".golden"].
NAME=s42a
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
layer_rows bf16 hg_new hg_base > $OUT/bench-layer.txt 2>&1; el bench-layer
cat $OUT/bench-layer.txt
seq_each 96 hg_new hg_base; el seq
for v in hg_new hg_base; do
  echo "== launch sequence $v: depthwise kernels"
  grep -E "mma|conv_staged|wgrad_staged" $OUT/seq-96-$v.txt | head -12
done
gpu_tests; el tests; cat $OUT/tests.txt
model_rows bf16 convnext_tiny,wtconvnext_tiny hg_new hg_base > $OUT/model.txt 2>&1
el model
grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
layer_rows bf16 hg_base hg_new > $OUT/bench-layer2.txt 2>&1; el bench-layer2
cat $OUT/bench-layer2.txt
