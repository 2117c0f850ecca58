#!/usr/bin/env bash
# Install dependencies, build (CPU, plus CUDA when nvcc exists) and run all tests with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON -DHAARGRAD_CUDA=AUTO
cmake --build build -j"$(nproc)"
cd build && ctest --no-tests=error --output-on-failure -j"$(nproc)" --timeout 900
