#!/usr/bin/env bash
# Dev use (device tool), sixth session, first call: the loader's GPU thread (nvJPEG decode beside the
# step, issue 13). GPU tests of the data path, bench-data per decode backend beside torchvision, then
# WTConvNeXt-T bf16 trained from JPEGs (decode nvjpeg, and turbo on the CPU) against synthetic data.
set -uo pipefail
source dev/run-lib.sh
el built
JF=/tmp/jf6
jpeg_folder $JF 160 10
timeout 150 /tmp/b/tests/test_gpu > $OUT/gpu.log 2>&1; ok $OUT/gpu.log
grep -E "GpuThread|OK \] GpuLoader" $OUT/gpu.log | head
timeout 60 /tmp/b/tests/test_data --gtest_filter='*Gpu*:*Nvjpeg*' > $OUT/data.log 2>&1; ok $OUT/data.log
el tests
wait $MK; tail -1 /tmp/mk-$(basename $JF).log; du -sh $JF | cut -f1
el folder
W=14
timeout 150 $HG bench-data configs/wtconvnext_tiny.yaml --device cuda --precision bf16 --dataset image_folder \
    --data-dir $JF --val-split validation --workers $W --batch-size 128 --img-size 224 --aa '' --reprob 0 --color-jitter 0 \
    --mixup 0 --cutmix 0 --train-interpolation bilinear --decoders nvjpeg,turbo_gpu_aug,turbo,stb,nvjpeg_gpu \
    --bench-epochs 2 --output $OUT/bench_data.json > $OUT/bench_data.txt 2>&1; cat $OUT/bench_data.txt | cut -c1-150
el bench-data
timeout 100 python3 scripts/peer-data-bench.py --data-dir $JF --workers $W --batch-size 128 --img-size 224 \
    --output $OUT/peer_data.json > $OUT/peer_data.txt 2>&1; tail -3 $OUT/peer_data.txt
el peer-data
R="configs/wtconvnext_tiny.yaml --num-classes 40 --workers $W --output /tmp/runs --plain --device cuda --precision bf16 --warmup-epochs 1 --lr 1e-3 --epochs 4 --grad-accum-steps 1 --aa '' --reprob 0 --mixup 0 --cutmix 0 --model-ema false"
r() { n=$1; shift; timeout $(( $(left) > 100 ? 100 : $(left) )) $HG train $R --experiment $n "$@" > $OUT/train-$n.log 2>&1; echo "== $n: $(grep -E 'done:|error' $OUT/train-$n.log | tail -1 | cut -c1-220)"; grep -E "epoch [0-9]/4:" $OUT/train-$n.log | cut -c1-230; }
eval r jpeg_nvjpeg --dataset image_folder --data-dir $JF --val-split validation --decode nvjpeg
eval r synthetic --dataset synthetic --synthetic-size 6400
eval r jpeg_turbo_gpu --dataset image_folder --data-dir $JF --val-split validation --gpu-augment true
el done
