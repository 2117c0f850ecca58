#!/usr/bin/env bash
# Dev use (device tool), twentieth session's seventh call, prebuilt binaries (dev/labbin-pack.sh):
#   hg_base  commit 82f0677's program;
#   hg_new   the tree: the pipelined staged kernels (WTConv synthesis, depthwise weight gradient)
#            build each staging walk once per kernel (stage_walk) instead of once per staging
#            call; the weight gradient's group indices in int32.
# ab_call with fp32 (GPU tests of the tree, bench-layer A/B, both models' bf16 bench A/B,
# hg_new's launch sequence at C = 96).
NAME=s20g
source dev/labbin-lib.sh
ab_call fp32
ab_summary
sed -n 9,36p $OUT/seq-96.txt; tail -1 $OUT/seq-96.txt
# (Rewritten onto dev/labbin-lib.sh's ab_summary after the call ran: the same commands.)
