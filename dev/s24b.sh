#!/usr/bin/env bash
# Dev use (device tool), prepared in the twenty-fourth session: the main job in bf16 on the GPU
# after the schedule became timm's cosine (warmup inside it; 90.41% on the CPU, 2026-12-05) and
# eval resizes bicubic (identity at 28 px): issue 10 asks >= 90% top-1. A slim pack so that the data
# fits the carry limit beside it:
#   rm -rf build/labbin && mkdir -p build/labbin && KEEP_NEW=0 dev/labbin-pack.sh  (then, to drop
#   the test programs: rm build/labbin/test_* && tar -C build -cJf build/labpack/labbin.tar.xz labbin)
#   mkdir -p .fmnist && cp /usr/share/datasets/fashion-mnist/*.gz .fmnist/  (Debian's dataset-fashion-mnist)
# Carry ["build/labpack", ".fmnist"].
NAME=s24b
source dev/labbin-lib.sh
timeout 150 $L/hg_new train configs/fashion_mnist.yaml --device cuda --precision bf16 \
  --data-dir $PWD/.fmnist --output /tmp/runs --experiment fmnist_bf16 --workers 8 --plain \
  > $OUT/fmnist_bf16.log 2>&1
grep -E "training step:|lr .* from lr_base|epoch 6/6:|best_top1|error|warn" $OUT/fmnist_bf16.log |
  tail -6 | cut -c1-220
el fmnist
