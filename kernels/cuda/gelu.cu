// CUDA exact-erf GELU of kernels/gelu.h. Kernels are templated on the storage type (float or
// __nv_bfloat16) and compute in float.
#include <algorithm>

#include "kernels/cuda/bf16.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.h"
#include "kernels/gelu.h"

namespace hg::kernels::cuda {
namespace {
constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

template <typename T>
__global__ void gelu_forward_kernel(const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = to_f32(x[i]);
    y[i] = from_f32<T>(0.5f * v * (1.0f + erff(v * kInvSqrt2)));
  }
}

template <typename T>
__global__ void gelu_backward_kernel(const T* x, const T* dy, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = to_f32(x[i]);
    const float cdf = 0.5f * (1.0f + erff(v * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
    dx[i] = from_f32<T>(to_f32(dy[i]) * (cdf + v * pdf));
  }
}

template <typename T>
__global__ void gelu_forward_backward_kernel(const T* x, const T* dy, T* y, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = to_f32(x[i]);
    const float cdf = 0.5f * (1.0f + erff(v * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
    y[i] = from_f32<T>(v * cdf);
    dx[i] = from_f32<T>(to_f32(dy[i]) * (cdf + v * pdf));
  }
}
}  // namespace

template <typename T>
void gelu_forward_backward(const T* x, const T* dy, T* y, T* dx, int64_t n) {
  if (n == 0) return;
  gelu_forward_backward_kernel<<<grid_stride_blocks(n), 256>>>(dev(x), dev(dy), dev(y), dev(dx), n);
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T>
void gelu_forward(const T* x, T* y, int64_t n) {
  if (n == 0) return;
  gelu_forward_kernel<<<grid_stride_blocks(n), 256>>>(dev(x), dev(y), n);
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T>
void gelu_backward(const T* x, const T* dy, T* dx, int64_t n) {
  if (n == 0) return;
  gelu_backward_kernel<<<grid_stride_blocks(n), 256>>>(dev(x), dev(dy), dev(dx), n);
  HG_CUDA_LAUNCH_CHECK();
}

#define HG_INSTANTIATE(T)                                                              \
  template void gelu_forward<T>(const T*, T*, int64_t);                               \
  template void gelu_backward<T>(const T*, const T*, T*, int64_t);                    \
  template void gelu_forward_backward<T>(const T*, const T*, T*, T*, int64_t);
HG_INSTANTIATE(float)
HG_INSTANTIATE(hg::bf16)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cuda
