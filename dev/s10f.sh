#!/usr/bin/env bash
# Dev use (device tool), tenth session: Fashion-MNIST in bf16 on the GPU with the submitted code,
# the trainer's step now one CUDA graph (issue 10: >= 90% top-1). Carry .fmnist too.
set -uo pipefail
source dev/run-lib.sh
el built
timeout 100 $HG train configs/fashion_mnist.yaml --device cuda --precision bf16 --data-dir $PWD/.fmnist --output /tmp/runs --experiment fmnist_bf16 --workers 8 --plain > $OUT/fmnist_bf16.log 2>&1
grep -E "training step:|epoch 12/12:|done:|error|warn" $OUT/fmnist_bf16.log | tail -5 | cut -c1-220
el done
