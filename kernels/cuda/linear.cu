// CUDA fully connected layer (kernels/linear.h): cuBLAS GEMMs (the forward with its bias fused
// through cuBLASLt, gemm_lt.h) plus the row-bias kernels.
// The bias kernels are templated on the storage type S (float or __nv_bfloat16) and accumulate in
// float.
#include <algorithm>
#include <memory>
#include <type_traits>

#include "core/cuda_stream.h"
#include "core/memory.h"
#include "kernels/cuda/bf16.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/cuda/launch.h"
#include "kernels/linear.h"
#include "kernels/matmul.h"
#include "kernels/reduce.h"

namespace hg::kernels::cuda {
namespace {


// y[i] += bias[i % cols] through bf16.cuh's vectorised map (one 64-bit modulo per 16-byte vector).
template <typename B>
struct AddBias {
  const B* bias;
  int64_t cols;
  __device__ void operator()(int64_t base, int e, const float (&y)[1], float (&out)[1]) const {
    int64_t c = base % cols + e;
    while (c >= cols) c -= cols;
    out[0] = y[0] + to_f32(bias[c]);
  }
};

// Column sums in two deterministic passes. Pass 1: block (32, 8) covers 32 columns of one chunk of
// rows; each of the 8 row lanes sums every 8th row of the chunk, then lane 0 adds the 8 lane sums
// in order. Pass 2: reduce.h's sum_rows adds the chunk sums in a fixed order.
constexpr int kColsPerBlock = 32, kRowLanes = 8, kMaxChunks = 512;

template <typename S>
__global__ void column_sum_chunks(int64_t rows, int64_t cols, int64_t rows_per_chunk, const S* gy,
                                  float* partial) {
  __shared__ float lane_sum[kRowLanes][kColsPerBlock + 1];
  const int64_t col = blockIdx.x * int64_t(kColsPerBlock) + threadIdx.x;
  const int64_t begin = blockIdx.y * rows_per_chunk, end = std::min(rows, begin + rows_per_chunk);
  float acc = 0.0f;
  if (col < cols)
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes)
      acc += to_f32(gy[r * cols + col]);
  lane_sum[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float total = 0.0f;
    for (int l = 0; l < kRowLanes; ++l) total += lane_sum[l][threadIdx.x];
    partial[blockIdx.y * cols + col] = total;
  }
}

}  // namespace

template <typename B, typename T>
void add_bias_rows(int64_t rows, int64_t cols, const B* bias, T* y) {
  if (rows * cols == 0) return;
  map_elements(MapArgs<device_t<T>, 1, 1>{{dev(y)}, {dev(y)}}, rows * cols,
               AddBias<device_t<B>>{dev(bias), cols});
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T, typename G>
void bias_grad_rows(int64_t rows, int64_t cols, const T* gy, G* gb) {
  if (cols == 0) return;
  // The chunking depends on the shape only, so the summation order is fixed.
  const int64_t rows_per_chunk = std::max<int64_t>(256, (rows + kMaxChunks - 1) / kMaxChunks);
  const int64_t chunks = std::max<int64_t>(1, (rows + rows_per_chunk - 1) / rows_per_chunk);
  const std::shared_ptr<void> mem = scratch(static_cast<size_t>(chunks * cols) * sizeof(float));
  float* partial = static_cast<float*>(mem.get());
  dim3 block(kColsPerBlock, kRowLanes),
      grid(static_cast<unsigned>((cols + kColsPerBlock - 1) / kColsPerBlock),
           static_cast<unsigned>(chunks));
  column_sum_chunks<<<grid, block, 0, hg::cuda::stream()>>>(rows, cols, rows_per_chunk, dev(gy),
                                                            partial);
  HG_CUDA_LAUNCH_CHECK();
  sum_rows(partial, chunks, cols, gb);  // the chunks in a fixed order
}

template <typename T>
void linear_forward(int64_t M, int64_t in, int64_t out, const T* x, const T* w, const T* bias,
                    T* y) {
  if (M * out == 0) return;
  // y = x w^T + bias, in one pass over y when cuBLASLt takes the bias into its epilogue
  if (bias != nullptr && gemm_bias<T>(false, true, M, out, in, x, w, bias, y)) return;
  gemm<T>(false, true, M, out, in, 1.0f, x, w, 0.0f, y);
  if (bias) add_bias_rows(M, out, bias, y);
}

template <typename T>
void linear_forward_add(int64_t M, int64_t in, int64_t out, const T* x, const T* w, const T* bias,
                        const T* shortcut, T* y) {
  if (M * out == 0) return;
  if (bias != nullptr && gemm_bias_add<T>(false, true, M, out, in, x, w, bias, shortcut, y)) return;
  HG_CUDA_CHECK(cudaMemcpyAsync(y, shortcut, size_t(M * out) * sizeof(T), cudaMemcpyDeviceToDevice,
                                hg::cuda::stream()));
  gemm<T>(false, true, M, out, in, 1.0f, x, w, 1.0f, y);  // y = x w^T + y
  if (bias) add_bias_rows(M, out, bias, y);
}

template <typename T>
void linear_backward_input(int64_t M, int64_t in, int64_t out, const T* gy, const T* w, T* gx) {
  if (M * in == 0) return;
  if (gemm_plain<T>(false, false, M, in, out, gy, w, gx)) return;  // gx = gy w
  gemm<T>(false, false, M, in, out, 1.0f, gy, w, 0.0f, gx);
}

template <typename T>
void linear_backward_weight(int64_t M, int64_t in, int64_t out, const T* x, const T* gy, T* gw) {
  if (in * out == 0) return;
  if (gemm_plain<T>(true, false, out, in, M, gy, x, gw)) return;  // gw = gy^T x
  gemm<T>(true, false, out, in, M, 1.0f, gy, x, 0.0f, gw);
}

template <typename T>
void linear_backward_weight_bias(int64_t M, int64_t in, int64_t out, const T* x, const T* gy, T* gw,
                                 T* gb) {
  if (out == 0) return;
  // gw = gy^T x, gb = column sums of gy. bf16 only: on the H200 (ConvNeXt-T, B = 128) the bf16
  // step gained with it, while the fp32 / tf32 steps measured with it (and the staged depthwise
  // kernel, not separated) were 3-5% slower; fp32 / tf32 keep the GEMM + column-sum kernels until
  // the epilogue alone is measured there (perf notes, fourth session).
  if constexpr (std::is_same_v<T, hg::bf16>)
    if (gemm_bias_grad<T>(out, in, M, gy, x, gw, gb)) return;
  linear_backward_weight(M, in, out, x, gy, gw);
  bias_grad_rows(M, out, gy, gb);
}

#define HG_INSTANTIATE(T)                                                                         \
  template void linear_backward_weight_bias<T>(int64_t, int64_t, int64_t, const T*, const T*, T*, \
                                               T*);                                               \
  template void add_bias_rows<T, T>(int64_t, int64_t, const T*, T*);                              \
  template void bias_grad_rows<T, T>(int64_t, int64_t, const T*, T*);                             \
  template void linear_forward<T>(int64_t, int64_t, int64_t, const T*, const T*, const T*, T*);   \
  template void linear_forward_add<T>(int64_t, int64_t, int64_t, const T*, const T*, const T*,    \
                                      const T*, T*);                                              \
  template void linear_backward_input<T>(int64_t, int64_t, int64_t, const T*, const T*, T*);      \
  template void linear_backward_weight<T>(int64_t, int64_t, int64_t, const T*, const T*, T*);
HG_INSTANTIATE(float)
HG_INSTANTIATE(hg::bf16)
#undef HG_INSTANTIATE
template void add_bias_rows<float, hg::bf16>(int64_t, int64_t, const float*, hg::bf16*);
template void bias_grad_rows<hg::bf16, float>(int64_t, int64_t, const hg::bf16*, float*);

}  // namespace hg::kernels::cuda
