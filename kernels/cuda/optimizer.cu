// CUDA optimizer updates of kernels/optimizer.h: one elementwise launch per parameter tensor, each
// element independent, so results do not depend on the launch configuration.
#include <algorithm>
#include <cmath>

#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.h"
#include "kernels/optimizer.h"

namespace hg::kernels::cuda {
namespace {

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, int64_t n, float decay,
                             float b1, float b2, float step_size, float bc2_sqrt, float eps) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    float pi = p[i] * decay;
    const float mi = b1 * m[i] + (1.0f - b1) * gi;
    const float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    pi -= step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
    m[i] = mi;
    v[i] = vi;
    p[i] = pi;
  }
}

__global__ void sgd_kernel(float* p, const float* g, float* buf, int64_t n, float lr, float mom,
                           float wd, bool nesterov, bool first) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float d = g[i] + wd * p[i];
    if (buf) {
      const float b = first ? d : mom * buf[i] + d;
      buf[i] = b;
      d = nesterov ? d + mom * b : b;
    }
    p[i] -= lr * d;
  }
}

__global__ void clip_kernel(float* g, int64_t n, const float* total_norm, double max_norm) {
  const float coef =
      static_cast<float>(fmin(max_norm / (static_cast<double>(total_norm[0]) + 1e-6), 1.0));
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    g[i] *= coef;
}
}  // namespace

void adamw_update(float* p, const float* g, float* m, float* v, int64_t n, const AdamWHyper& h) {
  if (n == 0) return;
  adamw_kernel<<<grid_stride_blocks(n), 256>>>(
      p, g, m, v, n, static_cast<float>(1.0 - h.lr * h.weight_decay), static_cast<float>(h.beta1),
      static_cast<float>(h.beta2), static_cast<float>(h.lr / h.bias_correction1),
      static_cast<float>(std::sqrt(h.bias_correction2)), static_cast<float>(h.eps));
  HG_CUDA_LAUNCH_CHECK();
}

void sgd_update(float* p, const float* g, float* buf, int64_t n, const SGDHyper& h) {
  if (n == 0) return;
  sgd_kernel<<<grid_stride_blocks(n), 256>>>(p, g, h.momentum != 0 ? buf : nullptr, n,
                                     static_cast<float>(h.lr), static_cast<float>(h.momentum),
                                     static_cast<float>(h.weight_decay), h.nesterov, h.first_step);
  HG_CUDA_LAUNCH_CHECK();
}

void clip_scale(float* g, int64_t n, const float* total_norm, double max_norm) {
  if (n == 0) return;
  clip_kernel<<<grid_stride_blocks(n), 256>>>(g, n, total_norm, max_norm);
  HG_CUDA_LAUNCH_CHECK();
}

}  // namespace hg::kernels::cuda
