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

// A list of arrays in chunks of at most kSquaresChunk elements, 256 chunks a launch: the table
// travels as the kernel's parameter (4 KB), block b sums chunk b into partial[first + b]. The
// chunks depend only on the sizes (determinism); a step's gradients (ConvNeXt-T: ~180 tensors)
// take a few launches instead of one per tensor.
constexpr int64_t kSquaresChunk = int64_t(1) << 16;
constexpr int kSquaresChunksPerLaunch = 256;
struct SquaresChunk {
  const float* x;
  int64_t n;
};
struct SquaresTable {
  SquaresChunk c[kSquaresChunksPerLaunch];
};

__global__ void sum_squares_chunks(const __grid_constant__ SquaresTable t, double* partial) {
  const SquaresChunk& c = t.c[blockIdx.x];
  double acc = 0;
  for (int64_t i = threadIdx.x; i < c.n; i += kThreads) {
    const double v = static_cast<double>(c.x[i]);
    acc += v * v;
  }
  const double s = block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

void sum_squares_impl(const std::vector<const float*>& xs, const std::vector<int64_t>& sizes,
                      bool take_sqrt, float* out) {
  HG_CHECK(xs.size() == sizes.size(), "sum_squares: ", xs.size(), " arrays but ", sizes.size(),
           " sizes");
  int64_t chunks = 0;
  for (int64_t n : sizes) chunks += n > 0 ? (n + kSquaresChunk - 1) / kSquaresChunk : 0;
  const Tensor ws = scratch_tensor({std::max<int64_t>(chunks, 1)}, DType::f64);
  double* partial = ws.data<double>();
  SquaresTable table{};
  int count = 0;
  int64_t first = 0;  // partial index of the table's chunk 0
  auto flush = [&] {
    if (count == 0) return;
    sum_squares_chunks<<<count, kThreads, 0, hg::cuda::stream()>>>(table, partial + first);
    HG_CUDA_LAUNCH_CHECK();
    first += count;
    count = 0;
  };
  for (size_t k = 0; k < xs.size(); ++k)
    for (int64_t s = 0; s < sizes[k]; s += kSquaresChunk) {
      table.c[count++] = SquaresChunk{xs[k] + s, std::min(kSquaresChunk, sizes[k] - s)};
      if (count == kSquaresChunksPerLaunch) flush();
    }
  flush();
  sum_partials<<<1, kThreads, 0, hg::cuda::stream()>>>(partial, chunks, take_sqrt, out);
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
