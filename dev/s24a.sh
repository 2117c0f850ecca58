#!/usr/bin/env bash
# Dev use (device tool), prepared in the twenty-fourth session (no device machine was lent then),
# prebuilt binaries (dev/labbin-pack.sh):
#   hg_base   build/haargrad of commit 0eff485 (product code of 80c9e48, measured in dev/s23a.sh),
#             copied to build/labbin/hg_base before building the change;
#   hg_new, test_gpu, test_ops   HEAD when packed: the split backward's H(x) and level-tail
#             sums in grad_x's memory (docs/fused-wtconv.md, section 15; no CUDA kernel changed in
#             the twenty-fifth session, which had no device either).
# Carry ["build/labpack", ".golden"]. What it answers: the GPU tests (test_gpu, test_ops' GPU
# cases, among them WTConvGpuMemory.SplitBackwardReusesGradX with its "backward workspace peak"
# lines), bench-layer's extra MiB (predicted 96/56/5 167.2 -> ~130.5, 192/28/4 84.8 -> ~66.5 in
# bf16; the time unchanged), both models' bf16 (unchanged), hg_new's launch sequence.
NAME=s24a
source dev/labbin-lib.sh
ab_call fp32
grep "backward workspace peak" $R/ops.log >> $OUT/tests.txt
ab_summary
