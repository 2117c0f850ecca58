// CUDA versions of kernels/elementwise.h (fp32, grid-stride loops).
#include <algorithm>

#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.h"
#include "kernels/elementwise.h"

namespace hg::kernels::cuda {
namespace {

template <typename F>
__global__ void map2(const float* a, const float* b, float* out, int64_t n, F f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = f(a[i], b[i]);
}
struct Add { __device__ float operator()(float x, float y) const { return x + y; } };
struct Sub { __device__ float operator()(float x, float y) const { return x - y; } };
struct Mul { __device__ float operator()(float x, float y) const { return x * y; } };

__global__ void scale_kernel(const float* a, float s, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = s * a[i];
}
__global__ void axpy_kernel(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] += alpha * x[i];
}
}  // namespace

void add(const float* a, const float* b, float* out, int64_t n) {
  if (n == 0) return;
  map2<<<grid_stride_blocks(n), 256>>>(a, b, out, n, Add{});
  HG_CUDA_LAUNCH_CHECK();
}
void sub(const float* a, const float* b, float* out, int64_t n) {
  if (n == 0) return;
  map2<<<grid_stride_blocks(n), 256>>>(a, b, out, n, Sub{});
  HG_CUDA_LAUNCH_CHECK();
}
void mul(const float* a, const float* b, float* out, int64_t n) {
  if (n == 0) return;
  map2<<<grid_stride_blocks(n), 256>>>(a, b, out, n, Mul{});
  HG_CUDA_LAUNCH_CHECK();
}
void scale(const float* a, float s, float* out, int64_t n) {
  if (n == 0) return;
  scale_kernel<<<grid_stride_blocks(n), 256>>>(a, s, out, n);
  HG_CUDA_LAUNCH_CHECK();
}
void axpy(float alpha, const float* x, float* y, int64_t n) {
  if (n == 0) return;
  axpy_kernel<<<grid_stride_blocks(n), 256>>>(alpha, x, y, n);
  HG_CUDA_LAUNCH_CHECK();
}

}  // namespace hg::kernels::cuda
