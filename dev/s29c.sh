#!/usr/bin/env bash
# Dev use (device tool), twenty-ninth session: the whole-plane backward's weight-gradient items
# taken largest first from a block counter, and its row loop with a rotating window (hg_new)
# against f02de4e (hg_base): GPU tests, bench-layer bf16 twice and fp32, both models bf16 twice,
# and both programs' launch sequences at C = 384.
# Pack: cp the baseline's build/haargrad to build/labbin/hg_base, build, dev/labbin-pack.sh.
# Carry ["build/labpack", ".golden"].
NAME=s29c
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
ab_rows hg_base hg_new
seq_each 384 hg_base hg_new; el seq
ab_summary
grep -E "plane_(backward|forward|wgrad)" $OUT/seq-384-hg_base.txt $OUT/seq-384-hg_new.txt | head -12
