#!/usr/bin/env bash
# Dev use (device tool), twentieth session's final call, prebuilt binaries of the submitted tree
# (carry ["build/labpack", ".golden"]; hg_new, test_ops, test_gpu, packed by dev/labbin-pack.sh):
# commit c5df07d (test_gpu and the op harness passed on it in dev/s20g.sh, so not rerun).
# bench-layer bf16 and fp32; the model bench in bf16 (twice), fp32
# and tf32; timm's peer bench in the same call. $OUT gets a few files.
NAME=s20h
source dev/labbin-lib.sh
final_call hg_new
# (Rewritten onto dev/labbin-lib.sh's final_call after the call ran: the same commands.)
