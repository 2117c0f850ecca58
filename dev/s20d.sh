#!/usr/bin/env bash
# Dev use (device tool), twentieth session's fourth call, prebuilt binaries (dev/labbin-pack.sh):
#   hg_base  commit e390270's program;
#   hg_new   the tree: every fold of a pass in one launch (fold_kernel); the whole-plane
#            kernels copy their planes with cp.async (plane_copy_async), all copies in flight.
# ab_call (GPU tests of the tree, bench-layer bf16 and fp32 A/B, both models' bf16 bench A/B,
# hg_new's launch sequence at C = 96), then hg_new's launch sequence at C = 384.
NAME=s20d
source dev/labbin-lib.sh
ab_call_at 384
# (Rewritten onto dev/labbin-lib.sh's ab_call_at after the call ran: the same commands.)
