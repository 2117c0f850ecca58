#!/usr/bin/env bash
# Dev use (device tool): the session's closing runs, two calls back to back so /tmp/b survives.
# PART=a: build, every GPU test, bench of both models in fp32 / tf32 / bf16, a bf16 breakdown with
# the roofline column, bench-layer (bf16, fp32), timm's peer bench in the same run.
# PART=b: the loader per decode backend (stb included) beside torchvision; WTConvNeXt-T bf16 from
# the JPEG folder (nvJPEG, CPU decode) against synthetic data; Fashion-MNIST bf16 when time allows.
# Short results on stdout, key logs under $OUT (the device returns few files: keep them few).
set -uo pipefail
source dev/gpu-build.sh
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
HG=/tmp/b/haargrad
ok() { grep -E "^\[  (FAILED|PASSED)|FAILED  \]" "$1" | head -6; }
if [ "${PART:-a}" = a ]; then
  el built; git log --oneline -1 2>/dev/null | cut -c1-60
  timeout 150 /tmp/b/tests/test_gpu > $OUT/tests.log 2>&1; ok $OUT/tests.log
  timeout 150 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > /tmp/ops.log 2>&1; ok /tmp/ops.log; cat /tmp/ops.log >> $OUT/tests.log
  timeout 60 /tmp/b/tests/test_data --gtest_filter='GpuStage*:*Gpu*:*Nvjpeg*' > /tmp/data.log 2>&1; ok /tmp/data.log; cat /tmp/data.log >> $OUT/tests.log
  el tests
  timeout 200 $HG bench --device cuda --batch 128 --img-size 224 --precision fp32,tf32,bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 --output $OUT/bench.json > $OUT/bench.txt 2>&1
  grep -A8 "^model  " $OUT/bench.txt | head -8; grep -E "^(convnext|wtconv).*train " $OUT/bench.txt | head -8
  el bench
  timeout 60 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny --breakdown --steps 4 --warmup 2 > /tmp/bd.txt 2>&1; grep -B3 -A12 "^op type" /tmp/bd.txt; cat /tmp/bd.txt >> $OUT/bench.txt
  el breakdown
  for p in bf16 fp32; do timeout 60 $HG bench-layer --kernel 5 --precision $p > /tmp/bl.txt 2>&1; grep -E "^(wtconv|ours dw 7)" /tmp/bl.txt | cut -c1-100; cat /tmp/bl.txt >> $OUT/bench-layer.txt; done
  el bench-layer
  timeout 230 python3 scripts/peer-bench.py --steps 12 --warmup 5 --modes tf32,amp_bf16,compile_bf16 --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1; tail -5 $OUT/peer.txt
  el done
else
  el built
  STAGES=data-bench BUILD=/tmp/b JPEG_PER_CLASS=250 timeout 240 scripts/gpu-check.sh > $OUT/data-bench.txt 2>&1; grep -E "^(decoder|stb|turbo|nvjpeg|torchvision)" $OUT/data-bench.txt | cut -c1-150
  el data-bench
  R="configs/wtconvnext_tiny.yaml --num-classes 20 --workers 14 --output /tmp/runs --plain --device cuda --precision bf16 --warmup-epochs 1 --lr 1e-3 --epochs 3 --aa '' --reprob 0 --mixup 0 --cutmix 0 --color-jitter 0 --model-ema false --train-interpolation bilinear"
  J="--dataset image_folder --data-dir /tmp/hg-jpeg-folder --val-split validation"
  r() { n=$1; shift; timeout 100 $HG train $R --experiment $n "$@" > /tmp/t.log 2>&1; echo "== $n: $(grep -E 'done:|error' /tmp/t.log | tail -1 | cut -c1-170)"; grep -E "epoch 3/3:" /tmp/t.log | cut -c1-200; cat /tmp/t.log >> $OUT/train.log; }
  eval r synthetic --dataset synthetic --synthetic-size 5000
  eval r jpeg_nvjpeg $J --decode nvjpeg
  eval r jpeg_cpu $J --decode cpu
  el jpeg
  if [ "${FMNIST:-1}" = 1 ]; then
    timeout 150 $HG train configs/fashion_mnist.yaml --device cuda --precision bf16 --data-dir $PWD/.fmnist --output /tmp/runs --experiment fmnist_bf16 --workers 8 > /tmp/f.log 2>&1; grep -E "done:|error" /tmp/f.log | tail -1 | cut -c1-200; cat /tmp/f.log >> $OUT/train.log
  fi
  el done
fi
