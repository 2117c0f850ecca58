#!/usr/bin/env bash
# The README's first command: install dependencies, build, and train the default main job
# (configs/fashion_mnist.yaml: a small WTConvNeXt on Fashion-MNIST from Debian's dataset package).
# The CUDA part is built only when a GPU is present (nvidia-smi works); otherwise a CPU build.
# Extra arguments go to `haargrad train` (e.g. --epochs 1 --device cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cuda=OFF
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then cuda=AUTO; fi
# Only the program (no tests), compiled for this machine's CPU (it trains where it is built), the
# library as unity sources (HAARGRAD_UNITY: a cold build in ~40% fewer CPU-seconds).
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHAARGRAD_CUDA=$cuda -DBUILD_TESTING=OFF -DHAARGRAD_NATIVE=ON \
  -DHAARGRAD_UNITY=ON >/dev/null
cmake --build build -j"$(nproc)" --target haargrad
exec ./build/haargrad train configs/fashion_mnist.yaml "$@"
