#!/usr/bin/env bash
# Thirty-seventh session: the submitted tree's GPU tests (test_gpu, with the nvJPEG test that now
# asserts where the queued work's block is, and every op harness GPU / CUDA case), then the final
# figures beside timm (final_call) and the 224 px configs' own step in bf16.
# Pack: KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
NAME=s37a
source dev/labbin-lib.sh
tests_first
grep -E "DecodeNeverWritesMemoryQueuedWorkStillUses" $R/gpu.log | head -3
final_call hg_new
config_rows hg_new
el done
