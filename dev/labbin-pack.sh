#!/usr/bin/env bash
# Packs prebuilt programs for the device tool (dev/labbin-lib.sh unpacks them there): copies
# build/haargrad as build/labbin/hg_new (unless KEEP_NEW=1), the test programs test_gpu and test_ops,
# the Debian libraries ldd lists (not the CUDA Toolkit's: the GPU machine has them) and nvJPEG (NVJPEG_LIB, default the PyPI wheel's copy under
# /work/nvjpeg-wheel), strips the programs and writes build/labpack/labbin.tar.xz (~20-35 MB; the
# device tool carries at most 64 MiB). An A/B call also needs build/labbin/hg_base: copy the
# baseline's build/haargrad there before building the change (`cp build/haargrad build/labbin/hg_base`).
# Usage (repository root, after building in build/): dev/labbin-pack.sh
# The nvJPEG copy, on a fresh machine: mkdir -p /work/nvjpeg-wheel && cd /work/nvjpeg-wheel &&
#   pip download --no-deps nvidia-nvjpeg && python3 -m zipfile -e nvidia_nvjpeg-*.whl .
# (also what -DNVJPEG_ROOT=/work/nvjpeg-wheel/nvidia/cu13 builds against).
set -euo pipefail
NVJPEG_LIB=${NVJPEG_LIB:-/work/nvjpeg-wheel/nvidia/cu13/lib/libnvjpeg.so.13}
mkdir -p build/labbin build/labpack
[ "${KEEP_NEW:-0}" = 1 ] || cp build/haargrad build/labbin/hg_new
cp build/tests/test_gpu build/tests/test_ops build/labbin/
for p in build/labbin/hg_* build/labbin/test_gpu build/labbin/test_ops; do
  strip "$p"
  # the system's libraries (OpenBLAS, libjpeg, yaml-cpp, spdlog, MPI, ...), not the CUDA Toolkit's
  for l in $(ldd "$p" | awk '/=> .*\/lib\/x86_64-linux-gnu\//{print $3}' |
             grep -vE 'libc\.so|libm\.so|libstdc|libgcc_s|libpthread|librt|libdl|libcuda\.so'); do
    cp -L -n "$l" build/labbin/ 2> /dev/null || true
  done
done
[ -f "$NVJPEG_LIB" ] && cp -L "$NVJPEG_LIB" build/labbin/
# xz -9's 64 MiB dictionary spans both hg_* programs (near copies): ~35 MB for three programs where
# tar -J's default gave 61 MB
tar -C build -cf - labbin | xz -9e -T2 > build/labpack/labbin.tar.xz
ls -la build/labpack/labbin.tar.xz
