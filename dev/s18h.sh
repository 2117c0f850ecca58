#!/usr/bin/env bash
# Dev use (device tool), nineteenth session's last call, prebuilt binaries of the tree (carry
# ["build/labpack", ".golden"]; hg_new, test_ops, test_gpu, packed as dev/s16d.sh's header says):
# commit 6a735c3 + haar_conv_takes (try_haar_conv's checks, also behind the new
# kernels::cuda::wtconv_haar_conv_levels) and bench-layer's I/O model counting the fused Haar +
# level conv. GPU tests; bench-layer bf16 and fp32 (the I/O lines).
# (Rewritten onto dev/labbin-lib.sh after the call ran: the same programs and options; the
# printed labels and log names differ a little.)
NAME=s18h
source dev/labbin-lib.sh
gpu_tests; el tests
{ IO=1 layer_rows bf16 hg_new; IO=1 layer_rows fp32 hg_new; } > $OUT/bench-layer.txt 2>&1
el bench-layer
cat $OUT/tests.txt $OUT/bench-layer.txt
