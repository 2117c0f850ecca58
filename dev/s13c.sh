#!/usr/bin/env bash
# Dev use (device tool), thirteenth session, last call: every test_gpu case on the submitted code
# (the pinned pool reusing blocks across sizes; nvJPEG's objects destroyed before the decode stream;
# s13b crashed in GpuLoader.NvjpegMatchesCpuLoaderForAnyWorkerCount with BlockCache's backed-out
# change). The op harness's GPU cases passed in s13b on the same kernels (357/357).
set -uo pipefail
source dev/run-lib.sh
el built
timeout 150 /tmp/b/tests/test_gpu > $OUT/gpu.log 2>&1; echo "test_gpu exit $?"; ok $OUT/gpu.log
grep -A4 "Failure" $OUT/gpu.log | head -20
grep -E "^\[       OK \] PinnedMemory|^\[  FAILED  \]" $OUT/gpu.log | head
el done
