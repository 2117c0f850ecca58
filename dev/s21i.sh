#!/usr/bin/env bash
# Dev use (device tool), twenty-first session, prebuilt binaries (dev/labbin-pack.sh):
#   hg_base  commit b5c3c8d's program;
#   hg_new   the tree: the whole-plane kernels copy their folded level and base filters into shared
#            memory with cp.async (the fold writes the level taps in the activations' storage, bf16
#            for a bf16 run, so they are copied as they are) instead of a load and a conversion per
#            entry and lane (dev/s21h.sh: ~11% of the 14 x 14 forward's stall samples, ~10% of the
#            backward's, which stages them once per image).
# ab_call with fp32 (GPU tests of the tree, bench-layer A/B, both models' bf16 A/B, hg_new's
# launch sequence at C = 96), then both programs' launch sequences at C = 384 and C = 768.
NAME=s21i
source dev/labbin-lib.sh
ab_call fp32
ab_summary
for c in 384 768; do
  seq_each $c hg_base hg_new
  for v in hg_base hg_new; do echo "== $v $c"; grep -E "plane" $OUT/seq-$c-$v.txt | head -3; done
done
# (Rewritten onto dev/labbin-lib.sh's seq_each after the call ran: the same commands in another
# order, the printing after both programs' sequences.)
el done
