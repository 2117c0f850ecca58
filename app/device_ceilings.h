// The two measured ceilings of a device that the roofline of `haargrad bench --breakdown` (and
// `bench-layer`'s %copy column) compares kernels with: how fast it can move bytes (a large
// device-to-device copy) and how fast it can multiply matrices (a large GEMM in the run's dtype).
// Measured, not taken from a data sheet: clocks, ECC and the precision's tensor-core path decide
// what a kernel can really reach on this machine today.
#pragma once

#include "core/dtype.h"

namespace hg::app {

/// Bytes per second of a copy within `device`'s memory, read and write both counted (CUDA: a
/// 1 GiB cudaMemcpyAsync device to device; CPU: a 256 MiB std::memcpy, one thread), median of
/// repeated runs. Throws hg::Error on a CUDA error or when the device is unavailable.
double copy_bytes_per_second(Device device);

/// FLOPs per second (2 per multiply-add) of a square matmul on `device` with `dtype` operands
/// (f32 or bf16; on CUDA f32 follows the current TF32 setting, bf16 accumulates in f32), size 8192
/// on the GPU and 512 on the CPU, median of repeated runs. Throws hg::Error as
/// copy_bytes_per_second.
double gemm_flops_per_second(Device device, DType dtype);

}  // namespace hg::app
