#!/usr/bin/env bash
# Dev use (device tool): the session's closing runs, two calls back to back so /tmp/b survives.
# PART=a: build, every GPU test, bench of both models in fp32 / tf32 / bf16, a bf16 breakdown with
# the roofline column, bench-layer bf16, timm's peer bench (amp bf16, compile + amp bf16).
# PART=b: the loader per decode backend (stb included) beside torchvision; WTConvNeXt-T bf16 from
# the JPEG folder (nvJPEG) against synthetic data; with 2 GPUs, data parallel 1 vs 2 ranks
# (mpirun + NCCL) and ZeRO-1. Short results on stdout, a few logs under $OUT.
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
HG=/tmp/b/haargrad
ok() { grep -E "^\[  (FAILED|PASSED)|FAILED  \]" "$1" | head -6; }
if [ "${PART:-a}" = a ]; then
  el "built ${COMMIT:-}"; nvidia-smi -L | head -2
  timeout 150 /tmp/b/tests/test_gpu > $OUT/tests.log 2>&1; ok $OUT/tests.log
  timeout 150 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > /tmp/ops.log 2>&1; ok /tmp/ops.log; cat /tmp/ops.log >> $OUT/tests.log
  timeout 60 /tmp/b/tests/test_data --gtest_filter='GpuStage*' > /tmp/data.log 2>&1; ok /tmp/data.log; cat /tmp/data.log >> $OUT/tests.log
  el tests
  timeout 200 $HG bench --device cuda --batch 128 --img-size 224 --precision fp32,tf32,bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 8 --warmup 3 --output $OUT/bench.json > $OUT/bench.txt 2>&1
  grep -A8 "^model  " $OUT/bench.txt | head -8; grep -E "^(convnext|wtconv).*train " $OUT/bench.txt | head -8
  el bench
  timeout 60 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny --breakdown --steps 4 --warmup 2 > /tmp/bd.txt 2>&1; grep -B3 -A12 "^op type" /tmp/bd.txt; cat /tmp/bd.txt >> $OUT/bench.txt
  el breakdown
  timeout 60 $HG bench-layer --kernel 5 --precision bf16 > $OUT/bench-layer.txt 2>&1; grep -E "^(wtconv|ours dw 7)" $OUT/bench-layer.txt | cut -c1-100
  el bench-layer
  timeout 200 python3 scripts/peer-bench.py --steps 12 --warmup 5 --modes amp_bf16,compile_bf16 --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1; tail -4 $OUT/peer.txt
  el done
else
  el built
  STAGES=data-bench BUILD=/tmp/b JPEG_PER_CLASS=250 timeout 200 scripts/gpu-check.sh > $OUT/data-bench.txt 2>&1; grep -E "^(decoder|stb|turbo|nvjpeg|torchvision)" $OUT/data-bench.txt | cut -c1-150
  el data-bench
  R="--num-classes 20 --workers 14 --output /tmp/runs --plain --device cuda --precision bf16 --warmup-epochs 1 --lr 1e-3 --epochs 3 --aa '' --reprob 0 --mixup 0 --cutmix 0 --color-jitter 0 --model-ema false --train-interpolation bilinear --grad-accum-steps 1"
  S="--dataset synthetic --synthetic-size 5000"
  r() { n=$1; shift; timeout 80 "$@" --experiment $n > /tmp/t.log 2>&1; echo "== $n: $(grep -E 'done:|error' /tmp/t.log | tail -1 | cut -c1-150)"; grep -E "epoch 3/3:|ZeRO|data parallel:" /tmp/t.log | cut -c1-220; cat /tmp/t.log >> $OUT/train.log; }
  eval r wt_synthetic $HG train configs/wtconvnext_tiny.yaml $R $S
  eval r wt_jpeg_nvjpeg $HG train configs/wtconvnext_tiny.yaml $R --dataset image_folder --data-dir /tmp/hg-jpeg-folder --val-split validation --decode nvjpeg
  el jpeg
  if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
    export NCCL_NVLS_ENABLE=0  # never NVLink multicast on this shared host (KINDS.md)
    M="mpirun --allow-run-as-root -np 2 --bind-to none -x LD_LIBRARY_PATH -x PATH -x NCCL_NVLS_ENABLE"
    eval r wt_2gpu $M $HG train configs/wtconvnext_tiny.yaml $R $S
    eval r cn_1gpu $HG train configs/convnext_tiny.yaml $R $S
    eval r cn_2gpu $M $HG train configs/convnext_tiny.yaml $R $S
    eval r cn_2gpu_zero1 $M $HG train configs/convnext_tiny.yaml $R $S --zero_stage 1
  else  # one GPU: the data-parallel path (buckets, hooks, NCCL) with one rank against the plain step
    eval r cn_1gpu $HG train configs/convnext_tiny.yaml $R $S
    eval r cn_dist_force $HG train configs/convnext_tiny.yaml $R $S --dist_force true
  fi
  el done
fi
