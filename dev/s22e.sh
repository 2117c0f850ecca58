#!/usr/bin/env bash
# Dev use (device tool), prebuilt binaries (dev/labbin-pack.sh, plus test_gpu2 / test_ops2 copied
# into build/labbin from the hg_new2 tree):
#   hg_base  HEAD ef2ea87's program;
#   hg_new   the backward's pyramids of x and G in one pass; the forward with f32 planes (7 x 7)
#            in one wave of blocks that stage their filters once for several images (the
#            candidate commit; test_gpu, test_ops);
#   hg_new2  hg_new, and half the backward's blocks run grad_x before the weight-gradient sums
#            (so that a multiprocessor's blocks are not all in the same phase; test_gpu2, test_ops2).
# GPU tests of both trees, bench-layer bf16 twice and fp32 once, the models' bf16 twice, and the
# launch sequences at 384 and 768 channels.
NAME=s22e
source dev/labbin-lib.sh
gpu_tests; mv $OUT/tests.txt $OUT/tests-new.txt
: > $R/gpu2.log  # (test_gpu2 left out: the carry limit)
timeout 150 $L/test_ops2 --gtest_filter='*Gpu*:*Cuda*' > $R/ops2.log 2>&1
{ echo "== test_gpu2"; ok $R/gpu2.log; echo "== test_ops2 GPU cases"; ok $R/ops2.log
  grep -A6 "Failure" $R/gpu2.log $R/ops2.log | head -40; } > $OUT/tests-new2.txt
el tests
{ for round in 1 2; do layer_rows bf16 hg_base hg_new hg_new2; done
  layer_rows fp32 hg_base hg_new hg_new2; } > $OUT/bench-layer.txt 2>&1; el bench-layer
for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_new hg_new2; done \
  > $OUT/model.txt 2>&1; el model
seq_each 384 hg_base hg_new hg_new2; seq_each 768 hg_base hg_new hg_new2; el seqs
cat $OUT/tests-new.txt $OUT/tests-new2.txt
grep -E "^==|wtconv fused" $OUT/bench-layer.txt
grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
for c in 384 768; do for v in hg_base hg_new hg_new2; do echo "== $c $v"; sed -n 8,12p $OUT/seq-$c-$v.txt | grep plane | cut -c1-100; done; done
