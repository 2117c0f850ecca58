#!/usr/bin/env bash
# Dev use (device tool), nineteenth session's final call, prebuilt binaries of the submitted tree
# (carry ["build/labpack", ".golden"]; hg_new, test_ops, test_gpu, packed as dev/s16d.sh's header
# says): commit 6a735c3 (test_gpu and the op harness passed on it in dev/s18f.sh, so not rerun).
# bench-layer bf16 and fp32; the model bench in bf16 (twice), fp32
# and tf32; timm's peer bench in the same call. $OUT gets a few files.
# (Rewritten onto dev/labbin-lib.sh after the call ran: the same programs and options; the
# printed labels and log names differ a little.)
NAME=s18g
source dev/labbin-lib.sh
final_call hg_new
# (Rewritten onto dev/labbin-lib.sh's final_call after the call ran: the same commands.)
