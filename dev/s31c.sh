#!/usr/bin/env bash
# Dev use (device tool): what the thirty-first session left for the next device call, in one call.
# (1) dev/s30/'s two f32 patches (hg_new, with its tree's GPU tests) against hg_base, a short
# form of dev/s30a.sh; (2) dev/s31/side-branches.patch (hg_side) against hg_base with the models' step
# launched op by op (`bench --cuda-graph false`) and as one graph, to tell the two readings of
# dev/s31/README.md apart: if the side branch wins op by op but loses in the graph, the graph's
# branches are what loses; if it loses both ways, the two one-wave kernels' contention is.
# Pack (the base tree clean): ninja -C build haargrad; cp build/haargrad build/labbin/hg_base;
# git apply dev/s31/side-branches.patch; ninja -C build haargrad; cp build/haargrad
# build/labbin/hg_side; git apply -R dev/s31/side-branches.patch; git apply both dev/s30/
# patches; ninja -C build haargrad tests/test_gpu tests/test_ops; KEEP_NEW=0 dev/labbin-pack.sh
# (hg_new = the f32 patches; ~55 MB: the carry limit is 64 MiB with the tree and .golden).
# Carry ["build/labpack", ".golden"].
NAME=s31c
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
gpu_tests; el tests; cat $OUT/tests.txt
{ for round in 1 2; do layer_rows fp32 hg_base hg_new; done; layer_rows bf16 hg_base hg_new; } \
  > $OUT/bench-layer.txt 2>&1
el bench-layer; cat $OUT/bench-layer.txt
{ model_rows tf32 convnext_tiny,wtconvnext_tiny hg_base hg_new
  model_rows fp32 convnext_tiny,wtconvnext_tiny hg_base hg_new; } > $OUT/model.txt 2>&1
el model; grep -E "^==|_tiny.* (fp32|tf32) +128 " $OUT/model.txt | cut -c1-120
for graph in false true false; do
  for v in hg_base hg_side; do
    timeout 90 $L/$v bench --device cuda --batch 128 --img-size 224 --precision bf16 \
      --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 \
      --cuda-graph $graph > $R/side-$v-$graph.txt 2>&1
    echo "== $v cuda-graph $graph"; grep -E "^(conv|wtconv)next_tiny.* bf16 +128 " $R/side-$v-$graph.txt
  done
done > $OUT/side.txt
el side; cat $OUT/side.txt
