#!/usr/bin/env bash
# Install every Debian 12 package haargrad needs to build, test and run its default job
# (gnuplot-nox draws the training curves, clang-format checks the code layout).
# Run as root (or with sudo). Idempotent. The CUDA Toolkit is optional and not installed here:
# when nvcc is on PATH or under /usr/local/cuda, the CUDA part is built as well (with NCCL, from the
# CUDA install, for multi-GPU runs). Open MPI launches data-parallel runs (mpirun) and is tested on the CPU.
set -euo pipefail
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
pkgs=(build-essential cmake pkg-config ca-certificates ccache
      libyaml-cpp-dev libspdlog-dev libfmt-dev libstb-dev libgtest-dev libgmock-dev zlib1g-dev
      nlohmann-json3-dev libcli11-dev libopenblas-dev libjpeg62-turbo-dev python3-numpy python3-pil
      gnuplot-nox clang-format
      libopenmpi-dev openmpi-bin
      dataset-fashion-mnist)
# Every package already installed (a second run, a prepared machine): no apt-get update, which
# alone takes about a minute of the README's first command.
installed=$(dpkg-query -W -f='${db:Status-Abbrev}\n' "${pkgs[@]}" 2>/dev/null | grep -c '^ii' || true)
if [ "$installed" -eq "${#pkgs[@]}" ]; then
  echo "haargrad: dependencies already installed"
  exit 0
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
echo "haargrad: dependencies installed"
