// CUDA exact-erf GELU of kernels/gelu.h. Kernels are templated on the storage type (float now,
// bf16 later) and compute in float.
#include <algorithm>

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
    const float v = static_cast<float>(x[i]);
    y[i] = T(0.5f * v * (1.0f + erff(v * kInvSqrt2)));
  }
}

template <typename T>
__global__ void gelu_backward_kernel(const T* x, const T* dy, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = static_cast<float>(x[i]);
    const float cdf = 0.5f * (1.0f + erff(v * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
    dx[i] = T(static_cast<float>(dy[i]) * (cdf + v * pdf));
  }
}

template <typename T>
__global__ void gelu_forward_backward_kernel(const T* x, const T* dy, T* y, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = static_cast<float>(x[i]);
    const float cdf = 0.5f * (1.0f + erff(v * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
    y[i] = T(v * cdf);
    dx[i] = T(static_cast<float>(dy[i]) * (cdf + v * pdf));
  }
}
}  // namespace

void gelu_forward_backward(const float* x, const float* dy, float* y, float* dx, int64_t n) {
  if (n == 0) return;
  gelu_forward_backward_kernel<float><<<grid_stride_blocks(n), 256>>>(x, dy, y, dx, n);
  HG_CUDA_LAUNCH_CHECK();
}

void gelu_forward(const float* x, float* y, int64_t n) {
  if (n == 0) return;
  gelu_forward_kernel<float><<<grid_stride_blocks(n), 256>>>(x, y, n);
  HG_CUDA_LAUNCH_CHECK();
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t n) {
  if (n == 0) return;
  gelu_backward_kernel<float><<<grid_stride_blocks(n), 256>>>(x, dy, dx, n);
  HG_CUDA_LAUNCH_CHECK();
}

}  // namespace hg::kernels::cuda
