#!/usr/bin/env bash
# Dev use (device tool), nineteenth session's fifth call, prebuilt binaries (carry
# ["build/labpack", ".golden"], packed as dev/s16d.sh's header says):
#   hg_base  commit afab5ee (synth_staged pipelined);
#   hg_new   the tree: synth_staged by column pairs, pointers advanced; staging walks without divisions;
#            test_ops and test_gpu are this tree's. Nsight details of synth_staged (new).
# GPU tests first; bench-layer bf16 base/new twice; the bf16 model bench; Nsight
# sequence at 96 of hg_new.
# (Rewritten onto dev/labbin-lib.sh after the call ran: the same programs and options; the
# printed labels and log names differ a little.)
NAME=s18e
source dev/labbin-lib.sh
ab_call
ncu_stalls hg_new "synth_staged|conv_staged|wgrad_staged" 12 > $OUT/ncu-synth.txt 2>&1; el ncu-synth
cat $OUT/ncu-synth.txt $OUT/tests.txt $OUT/bench-layer.txt $OUT/model.txt
