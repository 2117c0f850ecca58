#!/usr/bin/env bash
# Dev use (device tool), nineteenth session's last call, prebuilt binaries (carry
# ["build/labpack", ".golden"], packed as dev/s16d.sh's header says):
#   hg_base  commit cc88faf's program;
#   hg_new   the tree: haar_conv_kernel with 8 level rows a block (4 pairs, each warp two of them;
#            the halo's Haar 1.5x instead of 2x) and its phase 1 stepped by StageWalk.
# GPU tests first (this tree's), then bench-layer bf16 and the WTConvNeXt-T bf16 bench, base / new.
# (Rewritten onto dev/labbin-lib.sh after the call ran: the same programs and options; the
# printed labels and log names differ a little.)
NAME=s18i
source dev/labbin-lib.sh
gpu_tests; el tests; cat $OUT/tests.txt
layer_rows bf16 hg_base hg_new | tee $OUT/bench-layer.txt
el bench-layer
model_rows bf16 wtconvnext_tiny hg_base hg_new | grep -E "^==|^wtconvnext_tiny .*bf16 +128" | cut -c1-140 \
  | tee $OUT/model.txt
el model
