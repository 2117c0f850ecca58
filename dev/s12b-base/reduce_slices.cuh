// The second stage of the deterministic weight-gradient reductions: every block of the first stage
// wrote its own slice of partial sums, and this adds the slices in a fixed order (no atomics, so the
// result is bit-identical run to run). Used by kernels/cuda/depthwise_conv.cu and the WTConv kernels.
// Device code: include from .cu files only.
#pragma once

#include <cstdint>

#include "core/cuda_stream.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.h"

namespace hg::kernels::cuda {

/// out[e] = sum over slices z = 0, 1, ... (in this order) of partial[z][e], for e < n.
/// (A template so that each .cu file gets its own copy: the library is not built with -rdc.)
template <typename Acc>
__global__ void reduce_slices_kernel(const Acc* __restrict__ partial, int slices, int64_t n,
                                     Acc* __restrict__ out) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= n) return;
  Acc sum = 0;
  for (int z = 0; z < slices; ++z) sum += partial[int64_t(z) * n + e];
  out[e] = sum;
}

/// Launches reduce_slices_kernel over partial (slices, n) into out (n) on the default stream.
template <typename Acc>
inline void reduce_slices(const Acc* partial, int slices, int64_t n, Acc* out) {
  reduce_slices_kernel<Acc><<<blocks_for(n), 256, 0, hg::cuda::stream()>>>(partial, slices, n, out);
  HG_CUDA_LAUNCH_CHECK();
}

}  // namespace hg::kernels::cuda
