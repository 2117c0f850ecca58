#!/usr/bin/env bash
# Dev use (device tool), twenty-first session's sixth call, prebuilt binaries (dev/labbin-pack.sh):
#   hg_base  commit af4b10a's program;
#   hg_new   the tree: a leaf's first gradient of a backward is copied into its buffer with the
#            others (core/autograd.cpp, copy_many: one kernel launch per ~100) instead of one
#            cudaMemcpyAsync each (dev/s21b.sh found ~240 / ~377 device-to-device copies a
#            ConvNeXt-T / WTConvNeXt-T bf16 step, 0.28 / 0.46 ms, and idle gaps around them).
# GPU tests of the tree; both models A/B in bf16 twice, fp32 and tf32 once; hg_new's idle time
# between kernels (dev/s21b.sh's Nsight Systems run).
NAME=s21e
source dev/labbin-lib.sh
gpu_tests; el tests
{ for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_new; done
  for p in fp32 tf32; do model_rows $p convnext_tiny,wtconvnext_tiny hg_base hg_new; done; } \
  > $OUT/model.txt 2>&1
el model
cat $OUT/tests.txt
grep -E "^==|^(conv|wtconv)next_tiny.* (bf16|fp32|tf32) +128 |graph of|train " $OUT/model.txt | cut -c1-140
rm -f /tmp/nv-*.nsys-rep /tmp/nv-*.qdstrm
V=hg_new bash dev/s21b.sh 2>&1 | grep -E "^==|kernels in|gaps|memory operations"
el done
