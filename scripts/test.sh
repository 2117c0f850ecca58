#!/usr/bin/env bash
# Install dependencies, check the code layout (clang-format), build (CPU, plus CUDA when nvcc exists)
# and run all tests with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/check-format.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON -DHAARGRAD_CUDA=AUTO -DHAARGRAD_NATIVE=OFF \
  -DHAARGRAD_UNITY=OFF
cmake --build build -j"$(nproc)"
cd build && ctest --no-tests=error --output-on-failure -j"$(nproc)" --timeout 900
