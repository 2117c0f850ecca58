// CUDA optimizer updates of kernels/optimizer.h: one elementwise launch per parameter tensor (or,
// for AdamW, one per 256 chunks of many tensors), each element independent, so results do not
// depend on the launch configuration.
#include <algorithm>
#include <cmath>

#include "core/cuda_stream.h"
#include "core/error.h"
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
    float pi = __fmul_rn(p[i], decay);  // never contracted into an FMA: as the CPU
    const float mi = b1 * m[i] + (1.0f - b1) * gi;
    const float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    pi -= step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
    m[i] = mi;
    v[i] = vi;
    p[i] = pi;
  }
}

// Multi-tensor AdamW: the chunk table travels as the kernel's parameter (a __grid_constant__
// struct of at most 256 chunks, ~11 KB; kernel parameters may hold 32 KB on sm_70+ with
// CUDA 12.1+), the per-tensor hyper-parameters in device memory (kernels/optimizer.h). Block b
// updates chunk b.
struct AdamWChunk {
  float *p, *m, *v;
  const float* g;
  int n;
  int tensor;  // index into the hyper-parameter table
};
constexpr int kChunksPerLaunch = 256;
struct AdamWTable {
  AdamWChunk c[kChunksPerLaunch];
};

// clip_kernel's coefficient: min(max_norm / (total_norm + 1e-6), 1) in double, rounded to float.
__device__ float clip_coefficient(const float* total_norm, double max_norm) {
  return static_cast<float>(fmin(max_norm / (static_cast<double>(total_norm[0]) + 1e-6), 1.0));
}

__global__ void adamw_multi_kernel(const __grid_constant__ AdamWTable t, const float* hyper,
                                   float b1, float b2, float eps, const float* clip_norm,
                                   double max_norm) {
  const AdamWChunk& c = t.c[blockIdx.x];
  const float* h = hyper + c.tensor * kAdamWHyperFloats;
  const float decay = h[0], step_size = h[1], bc2_sqrt = h[2];
  // the clipped gradient as clip_kernel would have stored it (one float multiply), not stored
  const float coef = clip_norm ? clip_coefficient(clip_norm, max_norm) : 1.0f;
  for (int i = threadIdx.x; i < c.n; i += blockDim.x) {
    const float gi = clip_norm ? c.g[i] * coef : c.g[i];
    float pi = __fmul_rn(c.p[i], decay);  // as adamw_kernel
    const float mi = b1 * c.m[i] + (1.0f - b1) * gi;
    const float vi = b2 * c.v[i] + (1.0f - b2) * gi * gi;
    pi -= step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
    c.m[i] = mi;
    c.v[i] = vi;
    c.p[i] = pi;
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
  const float coef = clip_coefficient(total_norm, max_norm);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    g[i] *= coef;
}
}  // namespace

void adamw_update(float* p, const float* g, float* m, float* v, int64_t n, const AdamWHyper& h) {
  if (n == 0) return;
  adamw_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(
      p, g, m, v, n, static_cast<float>(1.0 - h.lr * h.weight_decay), static_cast<float>(h.beta1),
      static_cast<float>(h.beta2), static_cast<float>(h.lr / h.bias_correction1),
      static_cast<float>(std::sqrt(h.bias_correction2)), static_cast<float>(h.eps));
  HG_CUDA_LAUNCH_CHECK();
}

void adamw_update_multi(const std::vector<AdamWTensor>& tensors, const float* hyper,
                        const float* clip_norm, double max_norm) {
  if (tensors.empty()) return;
  const AdamWHyper& h0 = tensors[0].h;
  AdamWTable table{};
  int count = 0;
  auto flush = [&] {
    if (count == 0) return;
    adamw_multi_kernel<<<count, 256, 0, hg::cuda::stream()>>>(
        table, hyper, float(h0.beta1), float(h0.beta2), float(h0.eps), clip_norm, max_norm);
    HG_CUDA_LAUNCH_CHECK();
    count = 0;
  };
  for (size_t k = 0; k < tensors.size(); ++k) {
    const AdamWTensor& t = tensors[k];
    HG_CHECK(t.h.beta1 == h0.beta1 && t.h.beta2 == h0.beta2 && t.h.eps == h0.eps,
             "adamw_update_multi: every tensor must share beta1, beta2 and eps");
    for (int64_t s = 0; s < t.n; s += kAdamWChunk) {
      const int n = static_cast<int>(std::min(kAdamWChunk, t.n - s));
      table.c[count++] = AdamWChunk{t.p + s, t.m + s, t.v + s, t.g + s, n, static_cast<int>(k)};
      if (count == kChunksPerLaunch) flush();
    }
  }
  flush();
}

void sgd_update(float* p, const float* g, float* buf, int64_t n, const SGDHyper& h) {
  if (n == 0) return;
  sgd_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(
      p, g, h.momentum != 0 ? buf : nullptr, n, static_cast<float>(h.lr),
      static_cast<float>(h.momentum), static_cast<float>(h.weight_decay), h.nesterov, h.first_step);
  HG_CUDA_LAUNCH_CHECK();
}

void clip_scale(float* g, int64_t n, const float* total_norm, double max_norm) {
  if (n == 0) return;
  clip_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(g, n, total_norm, max_norm);
  HG_CUDA_LAUNCH_CHECK();
}

}  // namespace hg::kernels::cuda
