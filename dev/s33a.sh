#!/usr/bin/env bash
# Dev use (device tool): the thirty-second session's two prepared calls (dev/s32d.sh, dev/s32e.sh,
# removed with their patches once landed: git show 949f1fb:dev/s32d.sh) in one. hg_base =
# 949f1fb (submitted); hg_new = dev/s32/levels-in-synthesis.patch (the staged synthesis forms R
# from t_1 and the tail's rows at 96/56/5: no levels_synth launch, no R round trip) + two staging
# buffers in f32 too (staged_buffers() = 2 for both the synthesis and the depthwise weight
# gradient, the synthesis one block a multiprocessor in f32: what
# dev/s32/synth-f32-two-buffers.patch + wgrad-f32-two-buffers.patch do). In bf16 hg_new is the
# levels patch alone. GPU tests of hg_new's tree, bench-layer bf16 twice and fp32, both models in
# bf16 twice, tf32 and fp32, the 96/56/5 launch sequences, then timm's peer bench.
# Pack: build the clean tree, cp build/haargrad build/labbin/hg_base; apply the levels patch, set
# staged_buffers() to 2 and the synthesis's launch bounds to one block in f32; ninja -C build
# haargrad tests/test_gpu tests/test_ops; cp build/haargrad build/labbin/hg_new; KEEP_NEW=1
# dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s33a
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
{ for round in 1 2; do layer_rows bf16 hg_base hg_new; done; layer_rows fp32 hg_base hg_new; } \
  > $OUT/bench-layer.txt 2>&1
el bench-layer; cat $OUT/bench-layer.txt
{ for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_new; done
  for p in tf32 fp32; do model_rows $p convnext_tiny,wtconvnext_tiny hg_base hg_new; done; } \
  > $OUT/model.txt 2>&1
el model; grep -E "^==|_tiny.* (bf16|fp32|tf32) +128 " $OUT/model.txt | cut -c1-120
seq_each 96 hg_base hg_new; el seq
for v in hg_base hg_new; do echo "== $v"; grep -E "synth|haar|plane|level" $OUT/seq-96-$v.txt | head -16; done
timeout 150 python3 scripts/peer-bench.py --steps 10 --warmup 3 --modes amp_bf16,compile_bf16 \
  --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1
el peer; tail -3 $OUT/peer.txt | cut -c1-160
