// CUDA layer scale of kernels/layer_scale.h: forward is a broadcast multiply; dgamma is summed per
// row chunk into a (P, C) workspace, then reduce.h's sum_rows adds the P partials in order.
#include <algorithm>

#include "core/tensor.h"
#include "kernels/cuda/bf16.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.h"
#include "kernels/layer_scale.h"
#include "kernels/reduce.h"

namespace hg::kernels::cuda {
namespace {
// (base + e) % C with one 64-bit modulo per vector (base % C is the same for its elements).
__device__ __forceinline__ int64_t column(int64_t base, int e, int64_t C) {
  int64_t c = base % C + e;
  while (c >= C) c -= C;
  return c;
}

// y = x * gamma[c] (in = {x}) or y = shortcut + x * gamma[c] (in = {shortcut, x}), c = i % C.
struct ScaleRows {
  const float* gamma;
  int64_t C;
  __device__ void operator()(int64_t base, int e, const float (&x)[1], float (&y)[1]) const {
    y[0] = x[0] * gamma[column(base, e, C)];
  }
};
struct ResidualScaleRows {
  const float* gamma;
  int64_t C;
  __device__ void operator()(int64_t base, int e, const float (&in)[2], float (&y)[1]) const {
    y[0] = in[0] + in[1] * gamma[column(base, e, C)];
  }
};

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
      acc += to_f32(dy[r * C + c]) * to_f32(x[r * C + c]);
  s[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float t = 0;
    for (int k = 0; k < 8; ++k) t += s[k][threadIdx.x];
    partial[blockIdx.y * C + c] = t;
  }
}
}  // namespace

template <typename T>
void layer_scale_forward(const T* x, const float* gamma, T* y, int64_t rows, int64_t C) {
  const int64_t n = rows * C;
  if (n == 0) return;
  map_elements(MapArgs<device_t<T>, 1, 1>{{dev(x)}, {dev(y)}}, n, ScaleRows{gamma, C});
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T>
void residual_layer_scale_forward(const T* shortcut, const T* x, const float* gamma, T* y,
                                  int64_t rows, int64_t C) {
  const int64_t n = rows * C;
  if (n == 0) return;
  map_elements(MapArgs<device_t<T>, 2, 1>{{dev(shortcut), dev(x)}, {dev(y)}}, n,
               ResidualScaleRows{gamma, C});
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T>
void layer_scale_grad_gamma(const T* x, const T* dy, float* dgamma, int64_t rows, int64_t C) {
  if (C == 0) return;
  const int64_t P = column_partial_chunks(rows), chunk = (rows + P - 1) / P;
  const Tensor ws = scratch_tensor({P, C});
  dim3 grid(static_cast<unsigned>((C + 31) / 32), static_cast<unsigned>(P)), block(32, 8);
  grad_gamma_partial<<<grid, block>>>(dev(x), dev(dy), ws.data<float>(), rows, C, chunk);
  HG_CUDA_LAUNCH_CHECK();
  sum_rows(ws.data<float>(), P, C, dgamma);
}

#define HG_INSTANTIATE(T)                                                                        \
  template void layer_scale_forward<T>(const T*, const float*, T*, int64_t, int64_t);           \
  template void residual_layer_scale_forward<T>(const T*, const T*, const float*, T*, int64_t,  \
                                                int64_t);                                       \
  template void layer_scale_grad_gamma<T>(const T*, const T*, float*, int64_t, int64_t);
HG_INSTANTIATE(float)
HG_INSTANTIATE(hg::bf16)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cuda
