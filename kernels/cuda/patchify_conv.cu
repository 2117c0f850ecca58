// Patchify convolutions as GEMMs (see kernels/patchify_conv.h for the formulation).
// Compiled as C++17 by nvcc: includes only core/tensor.h, core/error.h, kernels/*.h, kernels/cuda/*.h.
#include <cstdlib>
#include <cstring>

#include "core/memory.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/launch.h"
#include "kernels/linear.h"
#include "kernels/matmul.h"
#include "kernels/patchify_conv.h"

namespace hg::kernels::cuda {
namespace {

// One thread per element of P (M, k*k*C): gather (to_patches) or scatter back (from_patches).
// e = ((m * k + kh) * k + kw) * C + c with m = (n * OH + oh) * OW + ow.
__device__ __forceinline__ int64_t x_index(int64_t e, int C, int k, int H, int W, int OH, int OW) {
  const int c = int(e % C);
  int64_t r = e / C;
  const int kw = int(r % k);
  r /= k;
  const int kh = int(r % k);
  r /= k;
  const int ow = int(r % OW);
  r /= OW;
  const int oh = int(r % OH);
  const int64_t n = r / OH;
  return ((n * H + oh * k + kh) * W + ow * k + kw) * C + c;
}

// kToPatches: P[e] = x[x_index(e)] (gather, src = x, dst = P); else x[x_index(e)] = P[e] (scatter
// back, src = P, dst = x; patches never overlap, so every x element is written at most once).
template <bool kToPatches>
__global__ void patch_copy_kernel(const float* __restrict__ src, int64_t total, int C, int k, int H,
                                  int W, int OH, int OW, float* __restrict__ dst) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= total) return;
  const int64_t xi = x_index(e, C, k, H, W, OH, OW);
  if (kToPatches)
    dst[e] = src[xi];
  else
    dst[xi] = src[e];
}

// PyTorch (O, C, k, k) <-> (O, k, k, C); e runs over the (O, C, k*k) order. kToKhwc: src is the
// PyTorch weight, dst the (O, k, k, C) one; else the other way round.
template <bool kToKhwc>
__global__ void weight_order_kernel(const float* __restrict__ src, int64_t total, int C, int kk,
                                    float* __restrict__ dst) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= total) return;
  const int t = int(e % kk);
  const int64_t r = e / kk;
  const int c = int(r % C);
  const int64_t f = ((r / C) * kk + t) * C + c;
  if (kToKhwc)
    dst[f] = src[e];
  else
    dst[e] = src[f];
}

void check(const char* op, const Conv2dShape& s) {
  HG_CHECK(patchify_conv_supported(s), op, ": not a patchify shape: N ", s.N, " H ", s.H, " W ", s.W,
           " C ", s.C, " O ", s.O, " kernel ", s.KH, "x", s.KW, " stride ", s.stride, " pad ", s.pad,
           " groups ", s.groups, " (needs kernel == stride > 1, pad 0, groups 1)");
}

struct Sizes {
  int64_t M, Kd, total;  // rows of P, its columns (k*k*C), its elements
};
Sizes sizes(const Conv2dShape& s) {
  const int64_t M = s.N * s.OH * s.OW, Kd = s.KH * s.KW * s.C;
  return {M, Kd, M * Kd};
}

/// The patch matrix of x, in workspace.
std::shared_ptr<void> patches(const Conv2dShape& s, const float* x) {
  const Sizes z = sizes(s);
  std::shared_ptr<void> p = scratch(size_t(z.total) * sizeof(float));
  patch_copy_kernel<true><<<blocks_for(z.total), 256>>>(x, z.total, int(s.C),
                                                        int(s.KH), int(s.H), int(s.W), int(s.OH),
                                                        int(s.OW), static_cast<float*>(p.get()));
  HG_CUDA_LAUNCH_CHECK();
  return p;
}

/// The weight in (O, kh, kw, C) order, in workspace.
std::shared_ptr<void> weight_khwc(const Conv2dShape& s, const float* weight) {
  const int64_t n = s.O * s.C * s.KH * s.KW;
  std::shared_ptr<void> w = scratch(size_t(n) * sizeof(float));
  weight_order_kernel<true><<<blocks_for(n), 256>>>(weight, n, int(s.C),
                                                    int(s.KH * s.KW), static_cast<float*>(w.get()));
  HG_CUDA_LAUNCH_CHECK();
  return w;
}

}  // namespace

bool patchify_conv_supported(const Conv2dShape& s) {
  static const bool cudnn_only = [] {
    const char* v = std::getenv("HAARGRAD_PATCHIFY");
    return v != nullptr && std::strcmp(v, "cudnn") == 0;
  }();
  // With TF32 on, cuDNN's tensor-core kernels beat GEMM + patch copy (H200, ConvNeXt-T: 4.2 vs
  // 5.2 ms per step); in exact fp32 the GEMM wins (7.9 vs 11.7 ms).
  return !cudnn_only && !hg::cuda::allow_tf32() && s.groups == 1 && s.KH == s.KW && s.KH == s.stride && s.stride > 1 &&
         s.pad == 0 && s.N > 0 && s.OH > 0 && s.OW > 0 && s.C > 0 && s.O > 0;
}

void patchify_conv_forward(const Conv2dShape& s, const float* x, const float* weight,
                           const float* bias, float* y) {
  check("patchify_conv_forward", s);
  const Sizes z = sizes(s);
  const std::shared_ptr<void> p = patches(s, x), w = weight_khwc(s, weight);
  gemm(false, true, z.M, s.O, z.Kd, 1.0f, static_cast<const float*>(p.get()),
       static_cast<const float*>(w.get()), 0.0f, y);
  if (bias != nullptr) add_bias_rows(z.M, s.O, bias, y);
}

void patchify_conv_backward_data(const Conv2dShape& s, const float* grad_y, const float* weight,
                                 float* grad_x) {
  check("patchify_conv_backward_data", s);
  const Sizes z = sizes(s);
  if (s.OH * s.KH != s.H || s.OW * s.KW != s.W)  // rows / columns no patch covers get 0
    HG_CUDA_CHECK(cudaMemsetAsync(grad_x, 0, size_t(s.N * s.H * s.W * s.C) * sizeof(float)));
  const std::shared_ptr<void> w = weight_khwc(s, weight);
  std::shared_ptr<void> gp = scratch(size_t(z.total) * sizeof(float));
  gemm(false, false, z.M, z.Kd, s.O, 1.0f, grad_y, static_cast<const float*>(w.get()), 0.0f,
       static_cast<float*>(gp.get()));
  patch_copy_kernel<false><<<blocks_for(z.total), 256>>>(static_cast<const float*>(gp.get()),
                                                         z.total, int(s.C), int(s.KH), int(s.H),
                                                         int(s.W), int(s.OH), int(s.OW), grad_x);
  HG_CUDA_LAUNCH_CHECK();
}

void patchify_conv_backward_weight(const Conv2dShape& s, const float* x, const float* grad_y,
                                   float* grad_weight) {
  check("patchify_conv_backward_weight", s);
  const Sizes z = sizes(s);
  const std::shared_ptr<void> p = patches(s, x);
  const int64_t n = s.O * z.Kd;
  std::shared_ptr<void> gw = scratch(size_t(n) * sizeof(float));
  gemm(true, false, s.O, z.Kd, z.M, 1.0f, grad_y, static_cast<const float*>(p.get()), 0.0f,
       static_cast<float*>(gw.get()));
  weight_order_kernel<false><<<blocks_for(n), 256>>>(static_cast<const float*>(gw.get()), n,
                                                     int(s.C), int(s.KH * s.KW), grad_weight);
  HG_CUDA_LAUNCH_CHECK();
}

}  // namespace hg::kernels::cuda
