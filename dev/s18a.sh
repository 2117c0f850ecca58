#!/usr/bin/env bash
# Dev use (device tool), eighteenth/nineteenth session's first call, prebuilt binaries (carry
# ["build/labpack", ".golden"], packed as dev/s16d.sh's header says):
#   hg_base  commit c98d749's program;
#   hg_new   the tree: + haar_conv_kernel (a split level's Haar pass and conv in one launch, bf16);
#            test_ops and test_gpu are this tree's.
# GPU tests first; bench-layer bf16 base/new twice, fp32 once; the bf16 model bench; Nsight
# sequence at 96 of hg_new.
# (Rewritten onto dev/labbin-lib.sh after the call ran: the same programs and options; the
# printed labels and log names differ a little.)
NAME=s18a
source dev/labbin-lib.sh
ab_call fp32
cat $OUT/tests.txt $OUT/bench-layer.txt $OUT/model.txt
