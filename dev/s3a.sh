#!/usr/bin/env bash
# Dev use (device tool), session 3 call A: build, every GPU test, a kernel profile of one WTConv
# layer step (nsys when present), bench-layer in bf16 and fp32, the timm logits check. Logs in $OUT.
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
el built; grep -E "haargrad: (nvJPEG|NCCL|MPI)" /tmp/b.log | cut -c1-80 | head -3
timeout 150 /tmp/b/tests/test_gpu > $OUT/gpu-tests.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/gpu-tests.log | head -8
timeout 150 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > $OUT/ops-gpu.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/ops-gpu.log | head -8
timeout 60 /tmp/b/tests/test_data --gtest_filter='GpuStage*' > $OUT/data-gpu.log 2>&1; grep -E "^\[  (FAILED|PASSED)|FAILED  \]" $OUT/data-gpu.log | head -4
el tests
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
echo "nsys: ${NSYS:-none}; ncu: $(command -v ncu || echo none)"
if [ -n "$NSYS" ]; then
  for p in bf16; do
    timeout 90 $NSYS profile -o /tmp/wt-$p --force-overwrite true /tmp/b/haargrad bench-layer --kernel 5 --precision $p --channels 96 --iters 10 --warmup 3 > /dev/null 2>&1
    timeout 60 $NSYS stats --report cuda_gpu_kern_sum --format csv /tmp/wt-$p.nsys-rep > $OUT/kern-$p.csv 2>/dev/null
    head -30 $OUT/kern-$p.csv | cut -d, -f1-4,9 | cut -c1-150
  done
fi
el profile
for p in bf16 fp32; do timeout 60 /tmp/b/haargrad bench-layer --kernel 5 --precision $p > $OUT/bench-layer-$p.txt 2>&1; grep -vE "^\s*$" $OUT/bench-layer-$p.txt | tail -14 | cut -c1-160; done
el bench-layer
timeout 220 python3 -u scripts/timm-check.py --haargrad /tmp/b/haargrad --out $OUT/timm-check.json > $OUT/timm-check.txt 2>&1; tail -6 $OUT/timm-check.txt | cut -c1-200
el done
