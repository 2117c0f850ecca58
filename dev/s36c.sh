#!/usr/bin/env bash
# Thirty-sixth session: cuBLASLt's first heuristic algorithm against its best on ConvNeXt-T's MLP
# GEMMs (dev/gemm_algos). Carry ["build/labalgos"] (the lab program alone: it links only CUDA's
# libraries).
set -uo pipefail
mkdir -p "${OUT:-/tmp/out}"
nvidia-smi --query-gpu=name --format=csv,noheader
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
build/labalgos/gemm_algos_lab "${REPS:-10}" 2>&1 | tee "${OUT:-/tmp/out}/algos.txt"
