#!/usr/bin/env bash
# Dev use (device tool), twelfth session: the GPU tests after levels_synth's chunked loads; bench-
# layer bf16; and the eleventh session's untested next step for issue 13: the trainer's step graphed
# with decode: nvjpeg (RGBI output, header-only parses, a capture waiting for a running decode:
# kernels/cuda/context.h capture_mutex), WTConvNeXt-T bf16 from JPEGs against synthetic data, both
# graphed, 100-step epochs.
set -uo pipefail
source dev/run-lib.sh
jpeg_folder /tmp/jf8 320 14
el built
gpu_tests
el tests
timeout 60 $HG bench-layer --precision bf16 2>&1 | grep -E "^(wtconv fused|ours dw)"
el bench-layer
folder_ready /tmp/jf8
jpeg_vs_synth /tmp/jf8
grep -h "training step:\|JPEG decoder thread\|CUDA graph" $OUT/train-*.log | cut -c12-220 | head -12
el done
