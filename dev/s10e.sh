#!/usr/bin/env bash
# Dev use (device tool), tenth session: the op harness's GPU cases on the submitted code (the
# final call's summary line of them was cut from its output).
set -uo pipefail
source dev/run-lib.sh
el built
timeout 170 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > $OUT/ops.log 2>&1; ok $OUT/ops.log
grep -A4 "Failure" $OUT/ops.log | head -20
el done
