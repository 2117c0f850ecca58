#!/usr/bin/env bash
# Dev use (device tool), twelfth session: staged rows loaded 8 vectors per thread at a time,
# synth_staged's t_0 / R loaded one column pair ahead, slice reductions over 8 warps. Builds the
# tree (/tmp/b) and the same tree with the three headers as they were (dev/s12b-base/, /tmp/b0),
# runs the GPU tests on the new one, then bench-layer and the bf16 model bench on both (A/B in one
# call), and the ncu launch sequence of the new fused step at 96/56/5.
# The base files it copied (dev/s12b-base/) were removed after the run; they are in commit 96bfd16 (the headers as they were: a61c836).
set -uo pipefail
rm -rf /tmp/base && mkdir -p /tmp/base && tar --exclude=./.git -cf - . | tar -C /tmp/base -xf -
cp dev/s12b-base/staged_rows.cuh dev/s12b-base/reduce_slices.cuh dev/s12b-base/wtconv_staged.cuh /tmp/base/kernels/cuda/
( cd /tmp/base && B=/tmp/b0 bash dev/gpu-build.sh ) > /tmp/b0-build.log 2>&1 &
BP=$!
source dev/run-lib.sh
el built
wait $BP; tail -3 /tmp/b0-build.log
el "base built"
gpu_tests
el tests
for b in b0 b; do
  echo "== $b"
  timeout 60 /tmp/$b/haargrad bench-layer --precision bf16 2>&1 | grep -E "^(wtconv fused|ours dw)" 
done
el bench-layer
for b in b0 b; do
  echo "== $b"
  timeout 90 /tmp/$b/haargrad bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 > $OUT/bench-$b.txt 2>&1; grep -A6 "^model  " $OUT/bench-$b.txt | cut -c1-170 | grep -v "^$\|^timed\|^syncs"
done
el bench
timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
  $HG bench-layer --precision bf16 --channels 96 --warmup 0 --iters 1 > $OUT/ncu-96.csv 2> $OUT/ncu-96.err
python3 dev/ncu_seq.py $OUT/ncu-96.csv 0 100000 > $OUT/seq-96.txt; tail -1 $OUT/seq-96.txt
el done
