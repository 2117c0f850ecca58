#!/usr/bin/env bash
# Dev use (device tool), twentieth session's sixth call, prebuilt binaries (dev/labbin-pack.sh):
#   hg_base  commit 82f0677's program;
#   hg_new   the tree: the backward's fused Haar + level conv over G also writes the Haar
#            coefficients and LL band of x at its own rows (HaarSecond), replacing the
#            haar_v4_kernel pass over x at each split level.
# ab_call (GPU tests of the tree, bench-layer bf16 A/B twice, both models' bf16 bench A/B,
# hg_new's launch sequence at C = 96), then Nsight's per-instruction counts (SASS) of hg_new's
# synthesis and Haar + conv kernels at 96/56/5 bf16, for the next session.
# Outcome: that launch went 78 -> 125 us (slower than the two it replaced); not committed.
NAME=s20f
source dev/labbin-lib.sh
ab_call
timeout 120 $NCU --clock-control none -k regex:"synth_staged|haar_conv" -c 3 --section SourceCounters \
  --page source --csv --print-source sass $L/hg_new "${NCU_LAYER[@]}" > $R/src.csv 2> $R/src.err
xz -k -c $R/src.csv > $OUT/src-sass.csv.xz; ls -la $R/src.csv; tail -2 $R/src.err
el sass
ab_summary
sed -n 9,36p $OUT/seq-96.txt; tail -1 $OUT/seq-96.txt
# (Rewritten onto dev/labbin-lib.sh's ab_summary after the call ran: the same commands.)
