// CUDA global average pooling over H, W of NHWC activations (kernels/pool.h). Templated on the
// storage type S (float now, bf16 later), accumulation in float.
#include <algorithm>

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
    for (int64_t k = 0; k < HW; ++k) acc += static_cast<float>(p[k * C]);
    y[i] = static_cast<S>(acc * inv);
  }
}

template <typename S>
__global__ void gap_backward(int64_t N, int64_t HW, int64_t C, const S* gy, S* gx) {
  const int64_t total = N * HW * C;
  const float inv = 1.0f / static_cast<float>(HW);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i % C, n = i / (HW * C);
    gx[i] = static_cast<S>(static_cast<float>(gy[n * C + c]) * inv);
  }
}

}  // namespace

void global_avg_pool_forward(int64_t N, int64_t HW, int64_t C, const float* x, float* y) {
  if (N * C == 0) return;
  gap_forward<float><<<grid_stride_blocks(N * C), 256>>>(N, HW, C, x, y);
  HG_CUDA_LAUNCH_CHECK();
}

void global_avg_pool_backward(int64_t N, int64_t HW, int64_t C, const float* gy, float* gx) {
  if (N * HW * C == 0) return;
  gap_backward<float><<<grid_stride_blocks(N * HW * C), 256>>>(N, HW, C, gy, gx);
  HG_CUDA_LAUNCH_CHECK();
}

}  // namespace hg::kernels::cuda
