#!/usr/bin/env bash
# Dev use (device tool), twenty-first session's last call, prebuilt binaries (commit b5c3c8d's
# program as hg_new): Nsight Compute's per-instruction counts and stall samples (SourceCounters,
# SASS) of the whole-plane forward and backward at 384/14/3 bf16 (their first launches), for the
# next plane-kernel design: where in the kernel the barrier waits and the issue slots go.
NAME=s21h
source dev/labbin-lib.sh
timeout 200 $NCU --clock-control none -k regex:"plane_(forward|backward)_kernel" -c 2 \
  --section SourceCounters --section WarpStateStats --page source --csv --print-source sass \
  $L/hg_new bench-layer --precision bf16 --channels 384 --warmup 0 --iters 1 > $R/src.csv 2> $R/src.err
xz -k -c $R/src.csv > $OUT/plane-src-sass.csv.xz; ls -la $R/src.csv $OUT/plane-src-sass.csv.xz; tail -2 $R/src.err
el done
