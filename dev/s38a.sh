#!/usr/bin/env bash
# Thirty-eighth session: the whole-plane backward's slices summed inside thread-block clusters
# (cluster_sum_slices, wtconv_plane.cuh) against fdf51b8 (hg_base): GPU tests of the change,
# bench-layer bf16 twice and fp32 once, both models bf16 twice, then hg_new's launch sequences at
# C = 96, 384 and 768. Pack: cp fdf51b8's haargrad to build/labbin/hg_base, then
# KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s38a
source dev/labbin-lib.sh
ab_call fp32
for c in 384 768; do ncu_seq_at hg_new $c; done
el seq
ab_summary
for c in 96 384 768; do echo "== seq $c"; sed -n 1,40p $OUT/seq-$c.txt | grep -E "plane|fold|reduce" | head -8; tail -1 $OUT/seq-$c.txt; done
