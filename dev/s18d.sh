#!/usr/bin/env bash
# Dev use (device tool), nineteenth session's fourth call, prebuilt binaries (carry
# ["build/labpack", ".golden"], packed as dev/s16d.sh's header says):
#   hg_base  commit f111399 (synth_staged stages t_0 and R);
#   hg_new   the tree: synth_staged_kernel pipelined (blocks walk items, the next staged by cp.async);
#            test_ops and test_gpu are this tree's. Nsight details of synth_staged (new).
# GPU tests first; bench-layer bf16 base/new twice; the bf16 model bench; Nsight
# sequence at 96 of hg_new.
# (Rewritten onto dev/labbin-lib.sh after the call ran: the same programs and options; the
# printed labels and log names differ a little.)
NAME=s18d
source dev/labbin-lib.sh
ab_call
ncu_stalls hg_new synth_staged 2 > $OUT/ncu-synth.txt 2>&1; el ncu-synth
cat $OUT/ncu-synth.txt $OUT/tests.txt $OUT/bench-layer.txt $OUT/model.txt
