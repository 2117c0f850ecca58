// The second stage of the deterministic weight-gradient reductions: every block of the first stage
// wrote its own slice of partial sums, and this adds the slices in a fixed order (no atomics, so the
// result is bit-identical run to run). Used by kernels/cuda/depthwise_conv.cu and the WTConv kernels.
// Device code: include from .cu files only.
#pragma once

#include <cstdint>

#include "core/cuda_stream.h"
#include "core/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.h"

namespace hg::kernels::cuda {

/// Warps of a reduce_slices_kernel block: each sums a contiguous run of the slices.
constexpr int kReduceWarps = 8;

/// out[e] = sum over the slices z of partial[z][e], for e < n, in a fixed order: block (32,
/// kReduceWarps) takes 32 consecutive e; warp y sums the slices [y * per, (y + 1) * per) in
/// order, then thread y = 0 adds the warps' sums in order y = 0, 1, ... (the same order on every
/// run, so the result is bit-identical run to run). One thread per e summing every slice left a
/// weight gradient's reduction (n = C * K * K, a few thousand) to ~10 blocks, each thread waiting
/// on hundreds of dependent loads (6-14 us per call on the H200, ncu, twelfth session).
/// (A template so that each .cu file gets its own copy: the library is not built with -rdc.)
template <typename Acc>
__global__ void __launch_bounds__(32 * kReduceWarps)
    reduce_slices_kernel(const Acc* __restrict__ partial, int slices, int64_t n,
                         Acc* __restrict__ out) {
  __shared__ Acc warp_sums[kReduceWarps][32];
  const int64_t e = blockIdx.x * int64_t(32) + threadIdx.x;
  const int per = (slices + kReduceWarps - 1) / kReduceWarps;
  const int z0 = threadIdx.y * per, z1 = min(slices, z0 + per);
  Acc sum = 0;
  if (e < n) {
    int z = z0;
    for (; z + 4 <= z1; z += 4) {  // four loads in flight, added in order
      const Acc a = partial[int64_t(z) * n + e], b = partial[int64_t(z + 1) * n + e];
      const Acc c = partial[int64_t(z + 2) * n + e], d = partial[int64_t(z + 3) * n + e];
      sum += a;
      sum += b;
      sum += c;
      sum += d;
    }
    for (; z < z1; ++z) sum += partial[int64_t(z) * n + e];
  }
  warp_sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || e >= n) return;
  Acc total = warp_sums[0][threadIdx.x];
  for (int y = 1; y < kReduceWarps; ++y) total += warp_sums[y][threadIdx.x];
  out[e] = total;
}

/// Launches reduce_slices_kernel over partial (slices, n) into out (n) on the thread's stream.
template <typename Acc>
inline void reduce_slices(const Acc* partial, int slices, int64_t n, Acc* out) {
  const int64_t blocks = (n + 31) / 32;
  HG_CHECK(blocks <= INT32_MAX, "reduce_slices: ", n, " sums are too many for one launch");
  reduce_slices_kernel<Acc><<<unsigned(blocks), dim3(32, kReduceWarps), 0, hg::cuda::stream()>>>(
      partial, slices, n, out);
  HG_CUDA_LAUNCH_CHECK();
}

}  // namespace hg::kernels::cuda
