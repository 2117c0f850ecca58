#!/usr/bin/env bash
# Dev use (device tool), twentieth session's fifth call, prebuilt binaries (dev/labbin-pack.sh):
#   hg_base  commit 1d4eaf4's program (one fold launch a pass, the plane kernels' cp.async copies);
#   hg_new   the tree: levels_synth_kernel indexed from a 3-D grid in int32 (no 64-bit divisions),
#            the unfold kernels one warp a filter (unfold_filter_warp), fold_kernel in int32.
# ab_call (GPU tests of the tree, bench-layer bf16 A/B twice, both models' bf16 bench A/B,
# hg_new's launch sequence at C = 96).
NAME=s20e
source dev/labbin-lib.sh
ab_call
ab_summary
sed -n 9,36p $OUT/seq-96.txt; tail -1 $OUT/seq-96.txt
# (Rewritten onto dev/labbin-lib.sh's ab_summary after the call ran: the same commands.)
