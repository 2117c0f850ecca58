#!/usr/bin/env bash
# Dev use (device tool), sixth session, second call: the loader's GPU thread + progressive / CMYK
# files kept by the workers (gpu_takes), losses read every log_interval steps, pinned labels.
# GPU tests of the data path, bench-data, torchvision, then WTConvNeXt-T bf16 trained from JPEGs
# (nvjpeg; turbo on the CPU) against synthetic data (with the GPU transform, and with the CPU one).
set -uo pipefail
source dev/run-lib.sh
el built
JF=/tmp/jf6
jpeg_folder $JF 160 10
timeout 150 /tmp/b/tests/test_gpu > $OUT/gpu.log 2>&1; ok $OUT/gpu.log
grep -E "decoded \]" $OUT/gpu.log | sort -u | head -12
timeout 60 /tmp/b/tests/test_data --gtest_filter='*Gpu*:*Nvjpeg*' > $OUT/data.log 2>&1; ok $OUT/data.log
timeout 100 /tmp/b/tests/test_train > $OUT/train-tests.log 2>&1; ok $OUT/train-tests.log
el tests
wait $MK; tail -1 /tmp/mk-$(basename $JF).log
W=14
timeout 120 $HG bench-data configs/wtconvnext_tiny.yaml --device cuda --precision bf16 --dataset image_folder \
    --data-dir $JF --val-split validation --workers $W --batch-size 128 --img-size 224 --aa '' --reprob 0 --color-jitter 0 \
    --mixup 0 --cutmix 0 --train-interpolation bilinear --decoders nvjpeg,turbo_gpu_aug,turbo,stb \
    --bench-epochs 2 --output $OUT/bench_data.json 2>&1 | grep -v warning | cut -c1-170
el bench-data
timeout 100 python3 scripts/peer-data-bench.py --data-dir $JF --workers $W --batch-size 128 --img-size 224 \
    --output $OUT/peer_data.json 2>&1 | tail -1
el peer-data
timeout 60 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models wtconvnext_tiny,convnext_tiny --wtconv fused --steps 6 --warmup 2 2>&1 | grep -A4 "^model  " | cut -c1-150
el bench
R="configs/wtconvnext_tiny.yaml --num-classes 40 --workers $W --output /tmp/runs --plain --device cuda --precision bf16 --warmup-epochs 1 --lr 1e-3 --epochs 4 --grad-accum-steps 1 --aa '' --reprob 0 --mixup 0 --cutmix 0 --color-jitter 0 --model-ema false"
r() { n=$1; shift; timeout $(( $(left) > 90 ? 90 : $(left) )) $HG train $R --experiment $n "$@" > $OUT/train-$n.log 2>&1; echo "== $n: $(grep -E 'done:|error' $OUT/train-$n.log | tail -1 | cut -c1-220)"; grep -E "epoch [0-9]/4:" $OUT/train-$n.log | sed -E 's/.*(epoch [0-9]\/4).*top-5 [0-9.]+%, /\1 /' | cut -c1-150; }
eval r jpeg_nvjpeg --dataset image_folder --data-dir $JF --val-split validation --decode nvjpeg
eval r synth_gpu --dataset synthetic --synthetic-size 6400 --gpu-augment true
eval r synth_cpu --dataset synthetic --synthetic-size 6400
eval r jpeg_turbo --dataset image_folder --data-dir $JF --val-split validation
el done
