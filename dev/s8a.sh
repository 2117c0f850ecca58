#!/usr/bin/env bash
# Dev use (device tool), eighth session: the GPU tests (the seventh session's last two commits had
# not run on a GPU), then WTConvNeXt-T bf16 from JPEGs (nvjpeg) against synthetic data with the new
# per-batch GPU data-stage times (does the training stream wait for decodes? how long is the crop?).
set -uo pipefail
source dev/run-lib.sh
el built
JF=/tmp/jf8
jpeg_folder $JF 320 16
gpu_tests
timeout 60 /tmp/b/tests/test_gpu --gtest_filter='GpuLoader.StageTimes*' 2>&1 | grep -E "OK|FAILED|Failure|Expected|Which" | head
el tests
folder_ready $JF
el folder
jpeg_vs_synth $JF
el done
