#!/usr/bin/env bash
# Dev use (device tool), twentieth session's third call, prebuilt binaries (dev/labbin-pack.sh):
#   hg_base  commit e390270's program;
#   hg_new   the tree: the whole-plane backward's weight-gradient items dealt to the warps longest
#            first (PlaneSched), its column loop unrolled by K; every fold of a pass in one launch
#            (fold_kernel).
# ab_call (GPU tests of the tree, bench-layer bf16 and fp32 A/B, both models' bf16 bench A/B,
# hg_new's launch sequence at C = 96), then hg_new's launch sequence at C = 384.
# Outcome: the schedule and the unroll changed nothing (plane backward 122.0 -> 121.8 us) and
# were not committed; the one-launch fold is part of commit 1d4eaf4.
NAME=s20c
source dev/labbin-lib.sh
ab_call_at 384
# (Rewritten onto dev/labbin-lib.sh's ab_call_at after the call ran: the same commands.)
