// CUDA deterministic reductions of kernels/reduce.h: fixed grids, per-block partials in a
// workspace, a fixed-order second pass (no atomics), accumulation in double.
#include <algorithm>

#include "core/cuda_stream.h"
#include "core/tensor.h"
#include "kernels/cuda/bf16.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.h"
#include "kernels/reduce.h"

namespace hg::kernels::cuda {
namespace {
constexpr int kThreads = 256;

// Sums `v` over the block in a fixed tree order; the result is valid in thread 0.
__device__ double block_sum(double v) {
  __shared__ double s[kThreads];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  return s[0];
}

template <typename T>
__global__ void sum_squares_partial(const T* x, int64_t n, double* partial) {
  double acc = 0;
  for (int64_t i = blockIdx.x * int64_t(kThreads) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * kThreads) {
    const double v = static_cast<double>(static_cast<float>(x[i]));
    acc += v * v;
  }
  const double s = block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void sum_partials(const double* partial, int64_t n, bool take_sqrt, float* out) {
  double acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) acc += partial[i];
  const double s = block_sum(acc);
  if (threadIdx.x == 0) out[0] = static_cast<float>(take_sqrt ? sqrt(s) : s);
}

// Block (32 columns, kRowLanes lanes): lane y sums rows y, y + kRowLanes, ... of its column in
// order; the lanes' sums are then added in lane order (fixed: the result is bit-identical run to
// run). Meant for partial-sum matrices of up to a few thousand rows.
constexpr int kRowLanes = 32;
template <typename O>
__global__ void sum_rows_kernel(const float* a, int64_t rows, int64_t cols, O* out) {
  __shared__ float lane_sum[kRowLanes][33];
  const int64_t c = blockIdx.x * int64_t(32) + threadIdx.x;
  float acc = 0;
  if (c < cols)
    for (int64_t r = threadIdx.y; r < rows; r += kRowLanes) acc += a[r * cols + c];
  lane_sum[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float total = 0;
    for (int l = 0; l < kRowLanes; ++l) total += lane_sum[l][threadIdx.x];
    out[c] = from_f32<O>(total);
  }
}

template <typename O>
void launch_sum_rows(const float* a, int64_t rows, int64_t cols, O* out) {
  if (cols == 0) return;
  const unsigned blocks = static_cast<unsigned>((cols + 31) / 32);
  sum_rows_kernel<<<blocks, dim3(32, kRowLanes), 0, hg::cuda::stream()>>>(a, rows, cols, out);
  HG_CUDA_LAUNCH_CHECK();
}

// Blocks of pass 1 for an array of n elements: a function of n only (determinism).
int64_t partial_blocks(int64_t n) {
  return std::clamp<int64_t>((n + 4 * kThreads - 1) / (4 * kThreads), 1, 128);
}

void sum_squares_impl(const std::vector<const float*>& xs, const std::vector<int64_t>& sizes,
                      bool take_sqrt, float* out) {
  HG_CHECK(xs.size() == sizes.size(), "sum_squares: ", xs.size(), " arrays but ", sizes.size(),
           " sizes");
  int64_t total_blocks = 0;
  for (int64_t n : sizes) total_blocks += n > 0 ? partial_blocks(n) : 0;
  const Tensor ws = scratch_tensor({std::max<int64_t>(total_blocks, 1)}, DType::f64);
  double* partial = ws.data<double>();
  int64_t offset = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    if (sizes[k] <= 0) continue;
    const int64_t blocks = partial_blocks(sizes[k]);
    sum_squares_partial<float><<<static_cast<unsigned>(blocks), kThreads, 0, hg::cuda::stream()>>>(
        xs[k], sizes[k], partial + offset);
    HG_CUDA_LAUNCH_CHECK();
    offset += blocks;
  }
  sum_partials<<<1, kThreads, 0, hg::cuda::stream()>>>(partial, total_blocks, take_sqrt, out);
  HG_CUDA_LAUNCH_CHECK();
}
}  // namespace

void sum_squares(const std::vector<const float*>& xs, const std::vector<int64_t>& sizes,
                 float* out) {
  sum_squares_impl(xs, sizes, false, out);
}

void l2_norm(const std::vector<const float*>& xs, const std::vector<int64_t>& sizes, float* out) {
  sum_squares_impl(xs, sizes, true, out);
}

void sum_rows(const float* a, int64_t rows, int64_t cols, float* out) {
  launch_sum_rows(a, rows, cols, out);
}

void sum_rows(const float* a, int64_t rows, int64_t cols, hg::bf16* out) {
  launch_sum_rows(a, rows, cols, dev(out));
}

}  // namespace hg::kernels::cuda
