#!/usr/bin/env bash
# Dev use (device tool), nineteenth session's second call, prebuilt binaries (carry
# ["build/labpack", ".golden"], packed as dev/s16d.sh's header says):
#   hg_base  commit 16abb10 (haar_conv_kernel);
#   hg_new   the tree: + synth_staged_kernel stages its t_0 and R rows with the input rows;
#            test_ops and test_gpu are this tree's. Nsight details of synth_staged (new).
# GPU tests first; bench-layer bf16 base/new twice; the bf16 model bench; Nsight
# sequence at 96 of hg_new.
# (Rewritten onto dev/labbin-lib.sh after the call ran: the same programs and options; the
# printed labels and log names differ a little.)
NAME=s18b
source dev/labbin-lib.sh
ab_call
timeout 90 $NCU --clock-control none -k regex:synth_staged -c 1 --section SpeedOfLight --section Occupancy \
  --section LaunchStats --section WarpStateStats --section SchedulerStats $L/hg_new "${NCU_LAYER[@]}" \
  > $R/ncu-synth.txt 2>&1
grep -E "Duration|Registers|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Eligible Warps|Memory Throughput|Compute \(SM\)|Stall|Block Limit|Shared Memory Configuration|Dynamic Shared" \
  $R/ncu-synth.txt | head -40 > $OUT/ncu-synth.txt
el ncu-synth
cat $OUT/ncu-synth.txt $OUT/tests.txt $OUT/bench-layer.txt $OUT/model.txt
