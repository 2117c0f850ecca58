#!/usr/bin/env bash
# Dev use (device tool), sixteenth session's fourth call, with prebuilt binaries (no build there;
# carry ["build/labpack"], packed as dev/dwconv_tc/README.md says): hg_base = commit 9148c2b's
# program, hg_ov = the whole-plane backward with region B shared (x and its pyramid during the
# weight-gradient sums, then the filters, level taps in bf16, and the rec buffers during the
# cascade: 61 instead of 110 KB a block at 14 x 14 bf16, three blocks a multiprocessor;
# dev/s16/plane-backward-overlay.patch); test_ops of hg_ov's tree, WTConv's GPU cases only.
# (The patches named here were applied in the seventeenth session, commit 6677a8e, and removed.)
# A third binary worth adding: dev/s16/plane-occupancy.patch (the same backward, and the forward
# with bf16 planes and level taps: 61 instead of 110 KB, three blocks; instead of the first patch,
# both apply to 9148c2b's kernels).
# Not run in the sixteenth session (no device time left). To run it: build the product
# (hg_base: build/haargrad), `git apply dev/s16/plane-backward-overlay.patch`, build haargrad and
# tests/test_ops again (hg_ov, test_ops), strip the three into build/labbin with every non-system
# library `ldd` lists and libnvjpeg.so.13, `tar -C build -cJf build/labpack/labbin.tar.xz labbin`
# (~29 MB), then the device tool with carry ["build/labpack"] (~60 s of run).
set -uo pipefail
T0=$(date +%s)
el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
tar -C /tmp -xJf build/labpack/labbin.tar.xz
export LD_LIBRARY_PATH=/tmp/labbin:/usr/local/cuda/lib64:/usr/local/cuda/lib
el unpacked
for v in hg_base hg_ov hg_base hg_ov; do
  timeout 25 /tmp/labbin/$v bench-layer --kernel 5 --precision bf16 > $OUT/bl-$v.txt 2>&1
  echo "== $v"; grep -E "^(wtconv fused|ours dw 7)" $OUT/bl-$v.txt
done
el bench
timeout 60 /tmp/labbin/test_ops --gtest_filter='*WTConvGpu*:Gpu/OpDevice.MatchesCpu/wtconv2d*' > $OUT/ops.log 2>&1
grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $OUT/ops.log | head -8
el tests
