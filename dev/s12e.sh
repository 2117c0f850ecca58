#!/usr/bin/env bash
# Dev use (device tool), twelfth session, final call on the submitted code (the latency fixes of
# 96bfd16 and levels_synth's chunked loads; no second stream, nvjpeg op by op): GPU tests (with the
# graph replay of the split path in bf16); the model bench in three precisions; bench-layer bf16
# and fp32; timm's amp / compiled bf16 beside them; the ncu launch sequence of a fused step at
# 96/56/5 (levels_synth's time). Ordered by importance: the device time left may cut the end.
set -uo pipefail
source dev/run-lib.sh
el built
gpu_tests
el tests
timeout 60 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 --output $OUT/bench.json > $OUT/bench.txt 2>&1; grep -A30 "^model  " $OUT/bench.txt | cut -c1-170 | grep -v "^$\|^timed\|^syncs\|replayed" | head -24
el bench
timeout 90 $HG bench --device cuda --batch 128 --img-size 224 --precision fp32,tf32 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 --output $OUT/bench-f32.json > $OUT/bench-f32.txt 2>&1; grep -A12 "^model  " $OUT/bench-f32.txt | cut -c1-170 | grep -v "^$\|^timed\|^syncs\|replayed" | head -16
el "bench fp32 tf32"
timeout 100 python3 scripts/peer-bench.py --steps 10 --warmup 3 --modes amp_bf16,compile_bf16 --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1; tail -3 $OUT/peer.txt
el peer
for p in bf16; do timeout 45 $HG bench-layer --kernel 5 --precision $p > $OUT/bench-layer-$p.txt 2>&1; grep -E "^(wtconv fused|ours dw 7)" $OUT/bench-layer-$p.txt; done
el bench-layer
timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
  $HG bench-layer --precision bf16 --channels 96 --warmup 0 --iters 1 > $OUT/ncu-96.csv 2> $OUT/ncu-96.err
python3 dev/ncu_seq.py $OUT/ncu-96.csv 0 100000 > $OUT/seq-96.txt; grep -m2 levels_synth $OUT/seq-96.txt; tail -1 $OUT/seq-96.txt
el done
