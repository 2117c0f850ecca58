#!/usr/bin/env bash
# Thirty-seventh session: the main job on the GPU, bf16 (issue 10 asks >= 90% top-1) and the
# config's own precision, after the session's trainer changes. A slim pack (no test programs) so
# that the data fits the carry limit beside it:
#   cp -r build/labbin /tmp/slim/ && rm /tmp/slim/labbin/test_* &&
#   tar -C /tmp/slim -cJf build/labslim/labbin.tar.xz labbin
#   mkdir -p .fmnist && cp /usr/share/datasets/fashion-mnist/*.gz .fmnist/  (Debian's dataset-fashion-mnist)
# Carry ["build/labslim", ".fmnist"]; run as: mkdir -p build/labpack && cp build/labslim/* build/labpack/ && bash dev/s37b.sh
NAME=s37b
source dev/labbin-lib.sh
for p in bf16 fp32; do
  timeout 150 $L/hg_new train configs/fashion_mnist.yaml --device cuda --precision $p \
    --data-dir $PWD/.fmnist --output /tmp/runs --experiment fmnist_$p --workers 8 --plain \
    > $OUT/fmnist_$p.log 2>&1
  echo "== $p"
  grep -E "training step:|epoch 6/6|best|error|warn" $OUT/fmnist_$p.log | tail -6 | cut -c1-220
  el fmnist $p
done
