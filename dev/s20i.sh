#!/usr/bin/env bash
# Dev use (device tool), twentieth session's ninth call, prebuilt binaries (dev/labbin-pack.sh with
# KEEP_NEW=1):
#   hg_base  commit c5df07d's program;
#   hg_walk  + stage_rows_async steps each copy's source offset with the walk (no offset product
#            per copy: ~23 -> ~18 instructions a 16-byte copy in the synthesis's SASS);
#   hg_both  + the whole-plane backward with as few blocks as fill the device once (images per
#            block = ceil(B groups / resident blocks): smaller partials and reduction).
# GPU tests (hg_both's tree), bench-layer bf16 twice, the models' bf16 bench twice, all three.
# Outcome: hg_walk committed (65ca4fa); hg_both's one wave of plane blocks was slower in the
# model (25.85 -> 25.95 ms) and not committed.
NAME=s20i
source dev/labbin-lib.sh
gpu_tests; el tests
{ for round in 1 2; do layer_rows bf16 hg_base hg_walk hg_both; done; } > $OUT/bench-layer.txt 2>&1
el bench-layer
for round in 1 2; do model_rows bf16 convnext_tiny,wtconvnext_tiny hg_base hg_walk hg_both; done \
  > $OUT/model.txt 2>&1
el model
ab_summary
# (Rewritten onto dev/labbin-lib.sh's ab_summary after the call ran: the same commands.)
