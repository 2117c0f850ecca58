#!/usr/bin/env bash
# Fortieth session, last call: the final tree's GPU tests (with the new
# GpuReduceSlices.SeveralSumsInOneCallEqualOneCallEach and the session's host changes), and
# bench-layer's --output written as CSV and as JSON by its name on a GPU (a helper's change, only
# compile-checked before). Pack: KEEP_NEW=0 dev/labbin-pack.sh with hg_new the tree;
# carry ["build/labpack", ".golden"].
NAME=s40d
source dev/labbin-lib.sh
tests_first
for f in rows.csv rows.json; do
  timeout 60 $L/hg_new bench-layer --precision bf16 --channels 96 --warmup 1 --iters 3 \
    --output $OUT/$f > $R/bl-$f.txt 2>&1
  echo "== $f (exit $?)"; head -c 600 $OUT/$f; echo
done
timeout 20 $L/hg_new bench-layer --output $OUT/rows.txt > $R/bl-txt.txt 2>&1
echo "== rows.txt (exit $?)"; tail -2 $R/bl-txt.txt
el done
