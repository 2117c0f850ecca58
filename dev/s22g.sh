#!/usr/bin/env bash
# Dev use (device tool), twenty-second session's final figures, prebuilt binaries
# (dev/labbin-pack.sh): hg_new = commit e2f4540's program (its GPU tests ran in dev/s22e.sh).
# final_call: bench-layer bf16 and fp32 (I/O model), both models in bf16, fp32, tf32, bf16, and
# timm's peer bench, all in this call.
NAME=s22g
source dev/labbin-lib.sh
final_call hg_new
grep -E "graph of|train " $OUT/model.txt | cut -c1-150 | head -12
