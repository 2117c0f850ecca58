// CUDA versions of kernels/elementwise.h: grid-stride loops over float or bf16 storage, float math.
#include <algorithm>

#include "core/cuda_stream.h"
#include "kernels/cuda/bf16.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.h"
#include "kernels/elementwise.h"

namespace hg::kernels::cuda {
namespace {

template <typename T, typename F>
__global__ void map2(const T* a, const T* b, T* out, int64_t n, F f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = from_f32<T>(f(to_f32(a[i]), to_f32(b[i])));
}

struct Add { __device__ float operator()(float x, float y) const { return x + y; } };
struct Sub { __device__ float operator()(float x, float y) const { return x - y; } };
struct Mul { __device__ float operator()(float x, float y) const { return x * y; } };

template <typename T>
__global__ void scale_kernel(const T* a, float s, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = from_f32<T>(s * to_f32(a[i]));
}

template <typename T>
__global__ void axpy_kernel(float alpha, const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = from_f32<T>(to_f32(y[i]) + alpha * to_f32(x[i]));
}

template <typename T, typename F>
void launch_map2(const T* a, const T* b, T* out, int64_t n, F f) {
  if (n == 0) return;
  map2<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(dev(a), dev(b), dev(out), n, f);
  HG_CUDA_LAUNCH_CHECK();
}

}  // namespace

template <typename T> void add(const T* a, const T* b, T* out, int64_t n) { launch_map2(a, b, out, n, Add{}); }
template <typename T> void sub(const T* a, const T* b, T* out, int64_t n) { launch_map2(a, b, out, n, Sub{}); }
template <typename T> void mul(const T* a, const T* b, T* out, int64_t n) { launch_map2(a, b, out, n, Mul{}); }

template <typename T>
void scale(const T* a, float s, T* out, int64_t n) {
  if (n == 0) return;
  scale_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(dev(a), s, dev(out), n);
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T>
void axpy(float alpha, const T* x, T* y, int64_t n) {
  if (n == 0) return;
  axpy_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(alpha, dev(x), dev(y), n);
  HG_CUDA_LAUNCH_CHECK();
}

#define HG_INSTANTIATE(T)                                          \
  template void add<T>(const T*, const T*, T*, int64_t);           \
  template void sub<T>(const T*, const T*, T*, int64_t);           \
  template void mul<T>(const T*, const T*, T*, int64_t);           \
  template void scale<T>(const T*, float, T*, int64_t);            \
  template void axpy<T>(float, const T*, T*, int64_t);
HG_INSTANTIATE(float)
HG_INSTANTIATE(hg::bf16)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cuda
