#!/usr/bin/env bash
# Dev use (device tool), nineteenth session's sixth call, prebuilt binaries (carry
# ["build/labpack", ".golden"], packed as dev/s16d.sh's header says):
#   hg_base  commit ad38458 (synth_staged by column pairs, staging walks);
#   hg_new   the tree: wgrad_staged pipelined (bf16: two buffers, cp.async), grid = resident blocks;
#            test_ops and test_gpu are this tree's. Nsight details of synth_staged (new).
# GPU tests first; bench-layer bf16 base/new twice; the bf16 model bench; Nsight
# sequence at 96 of hg_new.
# (Rewritten onto dev/labbin-lib.sh after the call ran: the same programs and options; the
# printed labels and log names differ a little.)
NAME=s18f
source dev/labbin-lib.sh
ab_call fp32
ncu_stalls hg_new wgrad_staged 3 > $OUT/ncu-synth.txt 2>&1; el ncu-synth
cat $OUT/ncu-synth.txt $OUT/tests.txt $OUT/bench-layer.txt $OUT/model.txt
