// CUDA global average pooling over H, W of NHWC activations (kernels/pool.h). Templated on the
// storage type S (float or __nv_bfloat16), accumulation in float.
#include <algorithm>

#include "core/cuda_stream.h"
#include "kernels/cuda/bf16.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.h"
#include "kernels/pool.h"

namespace hg::kernels::cuda {
namespace {


// One thread per (n, c): neighbouring threads read neighbouring channels (coalesced).
template <typename S>
__global__ void gap_forward(int64_t N, int64_t HW, int64_t C, const S* x, S* y) {
  const int64_t total = N * C;
  const float inv = 1.0f / static_cast<float>(HW);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = i / C, c = i % C;
    const S* p = x + n * HW * C + c;
    float acc = 0.0f;
    for (int64_t k = 0; k < HW; ++k) acc += to_f32(p[k * C]);
    y[i] = from_f32<S>(acc * inv);
  }
}

template <typename S>
__global__ void gap_backward(int64_t N, int64_t HW, int64_t C, const S* gy, S* gx) {
  const int64_t total = N * HW * C;
  const float inv = 1.0f / static_cast<float>(HW);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i % C, n = i / (HW * C);
    gx[i] = from_f32<S>(to_f32(gy[n * C + c]) * inv);
  }
}

}  // namespace

template <typename T>
void global_avg_pool_forward(int64_t N, int64_t HW, int64_t C, const T* x, T* y) {
  if (N * C == 0) return;
  gap_forward<<<grid_stride_blocks(N * C), 256, 0, hg::cuda::stream()>>>(N, HW, C, dev(x), dev(y));
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T>
void global_avg_pool_backward(int64_t N, int64_t HW, int64_t C, const T* gy, T* gx) {
  if (N * HW * C == 0) return;
  gap_backward<<<grid_stride_blocks(N * HW * C), 256, 0, hg::cuda::stream()>>>(N, HW, C, dev(gy),
                                                                               dev(gx));
  HG_CUDA_LAUNCH_CHECK();
}

#define HG_INSTANTIATE(T)                                                              \
  template void global_avg_pool_forward<T>(int64_t, int64_t, int64_t, const T*, T*);  \
  template void global_avg_pool_backward<T>(int64_t, int64_t, int64_t, const T*, T*);
HG_INSTANTIATE(float)
HG_INSTANTIATE(hg::bf16)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cuda
