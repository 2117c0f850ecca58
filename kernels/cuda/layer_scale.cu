// CUDA layer scale of kernels/layer_scale.h: forward is a broadcast multiply; dgamma is summed per
// row chunk into a (P, C) workspace, then reduce.h's sum_rows adds the P partials in order.
#include <algorithm>

#include "core/tensor.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.h"
#include "kernels/layer_scale.h"
#include "kernels/reduce.h"

namespace hg::kernels::cuda {
namespace {
template <typename T>
__global__ void layer_scale_kernel(const T* x, const float* gamma, T* y, int64_t rows, int64_t C) {
  const int64_t n = rows * C;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = T(static_cast<float>(x[i]) * gamma[i % C]);
}

// grid (ceil(C/32), P), block (32, 8): column c = blockIdx.x*32 + tx, rows of chunk blockIdx.y.
template <typename T>
__global__ void grad_gamma_partial(const T* x, const T* dy, float* partial, int64_t rows, int64_t C,
                                   int64_t chunk) {
  __shared__ float s[8][33];
  const int64_t c = blockIdx.x * 32 + threadIdx.x;
  const int64_t r0 = blockIdx.y * chunk, r1 = min(r0 + chunk, rows);
  float acc = 0;
  if (c < C)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8)
      acc += static_cast<float>(dy[r * C + c]) * static_cast<float>(x[r * C + c]);
  s[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float t = 0;
    for (int k = 0; k < 8; ++k) t += s[k][threadIdx.x];
    partial[blockIdx.y * C + c] = t;
  }
}
}  // namespace

void layer_scale_forward(const float* x, const float* gamma, float* y, int64_t rows, int64_t C) {
  const int64_t n = rows * C;
  if (n == 0) return;
  const int blocks = static_cast<int>(std::min<int64_t>((n + 255) / 256, 65535));
  layer_scale_kernel<float><<<blocks, 256>>>(x, gamma, y, rows, C);
  HG_CUDA_LAUNCH_CHECK();
}

void layer_scale_grad_gamma(const float* x, const float* dy, float* dgamma, int64_t rows,
                            int64_t C) {
  if (C == 0) return;
  const int64_t P = column_partial_chunks(rows), chunk = (rows + P - 1) / P;
  const Tensor ws = scratch_tensor({P, C});
  dim3 grid(static_cast<unsigned>((C + 31) / 32), static_cast<unsigned>(P)), block(32, 8);
  grad_gamma_partial<float><<<grid, block>>>(x, dy, ws.data<float>(), rows, C, chunk);
  HG_CUDA_LAUNCH_CHECK();
  sum_rows(ws.data<float>(), P, C, dgamma);
}

}  // namespace hg::kernels::cuda
