// Deterministic reductions: sums of squares (gradient clipping, global L2 norms) and the column
// sums that finish the per-chunk partials of parameter gradients (LayerNorm weight/bias, layer
// scale).
//
// Determinism rule (CUDA): every reduction is two-pass with a fixed grid: pass 1 writes one partial
// per block to a workspace, pass 2 adds the partials in a fixed order. No floating-point atomics,
// so results are bit-identical run to run. Accumulation is in double inside the reductions (cheap
// next to the memory traffic, and it makes norms of large tensors accurate).
// Errors: the CUDA functions throw hg::Error on a failed launch (HG_CUDA_LAUNCH_CHECK) or
// workspace allocation, sum_squares / l2_norm also when xs and sizes differ in length, and all of
// them always in a build without CUDA; the CPU sum_squares checks nothing.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include <vector>

namespace hg::kernels {

/// How many row chunks the CUDA column-gradient kernels split `rows` into: the P of a (P, C)
/// partial-sum matrix. Enough chunks to fill the GPU, few enough that pass 2 is cheap.
inline int64_t column_partial_chunks(int64_t rows) {
  const int64_t rows_per_chunk = 64;
  int64_t p = (rows + rows_per_chunk - 1) / rows_per_chunk;
  return p < 1 ? 1 : (p > 512 ? 512 : p);
}

namespace cpu {
/// sum_i x[i]^2, accumulated in double.
template <typename T>
double sum_squares(const T* x, int64_t n);
}  // namespace cpu

// CUDA entry points (a build without CUDA links kernels/nocuda/cuda_stubs.cpp: they throw).
namespace cuda {
/// out[0] = sum over all arrays of sum_i x[i]^2 (one float in device memory). xs[k] holds sizes[k]
/// floats on the GPU; empty lists give 0. One pass-1 launch per array, one pass-2 launch.
void sum_squares(const std::vector<const float*>& xs, const std::vector<int64_t>& sizes,
                 float* out);
/// out[0] = sqrt(sum_squares(xs)): the global L2 norm of a list of arrays (gradient clipping).
void l2_norm(const std::vector<const float*>& xs, const std::vector<int64_t>& sizes, float* out);
/// out[c] = sum_r a[r, c] for a dense (rows, cols) float array on the GPU, meant for partial-sum
/// matrices (rows = chunks, e.g. column_partial_chunks). Deterministic: 32 row lanes per column
/// each sum rows lane, lane + 32, ... in order, then the lanes are added in a fixed order. out is
/// float or hg::bf16 (rounded once at the end).
void sum_rows(const float* a, int64_t rows, int64_t cols, float* out);
void sum_rows(const float* a, int64_t rows, int64_t cols, hg::bf16* out);
}  // namespace cuda

}  // namespace hg::kernels
