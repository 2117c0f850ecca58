// Patchify convolutions as GEMMs (see kernels/patchify_conv.h for the formulation).
// Compiled as C++17 by nvcc: includes only core/tensor.h, core/error.h, kernels/*.h and
// kernels/cuda/*.h.
#include "core/memory.h"
#include "kernels/cuda/bf16.cuh"
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
// One thread per unit U of V = sizeof(U) / element-size elements: with C % V == 0 the V elements
// of a unit are consecutive in both P and x (a patch row is k*C contiguous elements in each), so
// U = uint4 moves 16 bytes per thread with the index arithmetic done once per unit.
template <bool kToPatches, typename U>
__global__ void patch_copy_kernel(const U* __restrict__ src, int64_t units, int V, int C, int k,
                                  int H, int W, int OH, int OW, U* __restrict__ dst) {
  const int64_t u = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (u >= units) return;
  const int64_t xu = x_index(u * V, C, k, H, W, OH, OW) / V;
  if (kToPatches)
    dst[u] = src[xu];
  else
    dst[xu] = src[u];
}

/// Launches patch_copy_kernel over `total` elements of size `elem` bytes: 16-byte units when the
/// channels allow (C * elem % 16 == 0) and both arrays are 16-byte aligned, else one element each.
template <bool kToPatches, typename T>
void patch_copy(const T* src, int64_t total, const Conv2dShape& s, T* dst) {
  const int C = int(s.C), k = int(s.KH), H = int(s.H), W = int(s.W), OH = int(s.OH), OW = int(s.OW);
  if ((C * sizeof(T)) % 16 == 0 && aligned16(src) && aligned16(dst)) {
    const int V = int(16 / sizeof(T));
    const int64_t units = total / V;
    patch_copy_kernel<kToPatches><<<blocks_for(units), 256, 0, hg::cuda::stream()>>>(
        reinterpret_cast<const uint4*>(src), units, V, C, k, H, W, OH, OW,
        reinterpret_cast<uint4*>(dst));
  } else {
    patch_copy_kernel<kToPatches>
        <<<blocks_for(total), 256, 0, hg::cuda::stream()>>>(src, total, 1, C, k, H, W, OH, OW, dst);
  }
  HG_CUDA_LAUNCH_CHECK();
}

// PyTorch (O, C, k, k) <-> (O, k, k, C); e runs over the (O, C, k*k) order. kToKhwc: src is the
// PyTorch weight, dst the (O, k, k, C) one; else the other way round.
// S -> D converts (f32 master weight -> bf16 compute copy, and back for the gradient).
template <bool kToKhwc, typename S, typename D>
__global__ void weight_order_kernel(const S* __restrict__ src, int64_t total, int C, int kk,
                                    D* __restrict__ dst) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= total) return;
  const int t = int(e % kk);
  const int64_t r = e / kk;
  const int c = int(r % C);
  const int64_t f = ((r / C) * kk + t) * C + c;
  if (kToKhwc)
    dst[f] = from_f32<D>(to_f32(src[e]));
  else
    dst[e] = from_f32<D>(to_f32(src[f]));
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

/// The patch matrix of x (storage type T), in workspace.
template <typename T>
std::shared_ptr<void> patches(const Conv2dShape& s, const T* x) {
  const Sizes z = sizes(s);
  std::shared_ptr<void> p = scratch(size_t(z.total) * sizeof(T));
  patch_copy<true>(dev(x), z.total, s, static_cast<device_t<T>*>(p.get()));
  return p;
}

/// The f32 weight in (O, kh, kw, C) order and storage type T, in workspace.
template <typename T>
std::shared_ptr<void> weight_khwc(const Conv2dShape& s, const float* weight) {
  const int64_t n = s.O * s.C * s.KH * s.KW;
  std::shared_ptr<void> w = scratch(size_t(n) * sizeof(T));
  weight_order_kernel<true><<<blocks_for(n), 256, 0, hg::cuda::stream()>>>(
      weight, n, int(s.C), int(s.KH * s.KW), static_cast<device_t<T>*>(w.get()));
  HG_CUDA_LAUNCH_CHECK();
  return w;
}

/// gw (O, Kd) = gy^T P with float output for both storage types (bf16 inputs: f32 accumulation
/// and an f32 result, the weight gradient never rounds to bf16).
void gemm_weight_grad(const Conv2dShape& s, const Sizes& z, const float* gy, const float* p, float* gw) {
  gemm(true, false, s.O, z.Kd, z.M, 1.0f, gy, p, 0.0f, gw);
}
void gemm_weight_grad(const Conv2dShape& s, const Sizes& z, const hg::bf16* gy, const hg::bf16* p,
                      float* gw) {
  gemm_f32_out(true, false, s.O, z.Kd, z.M, 1.0f, gy, p, 0.0f, gw);
}

}  // namespace

bool patchify_conv_supported(const Conv2dShape& s) {
  // With TF32 on, cuDNN's tensor-core kernels beat GEMM + patch copy (H200, ConvNeXt-T: 4.2 vs
  // 5.2 ms per step); in exact fp32 the GEMM wins (7.9 vs 11.7 ms).
  return !hg::cuda::allow_tf32() && s.groups == 1 && s.KH == s.KW && s.KH == s.stride &&
         s.stride > 1 && s.pad == 0 && s.N > 0 && s.OH > 0 && s.OW > 0 && s.C > 0 && s.O > 0;
}

template <typename T>
void patchify_conv_forward(const Conv2dShape& s, const T* x, const float* weight, const float* bias,
                           T* y) {
  check("patchify_conv_forward", s);
  const Sizes z = sizes(s);
  const std::shared_ptr<void> p = patches(s, x), w = weight_khwc<T>(s, weight);
  gemm<T>(false, true, z.M, s.O, z.Kd, 1.0f, static_cast<const T*>(p.get()),
          static_cast<const T*>(w.get()), 0.0f, y);
  if (bias != nullptr) add_bias_rows(z.M, s.O, bias, y);
}

template <typename T>
void patchify_conv_backward_data(const Conv2dShape& s, const T* grad_y, const float* weight,
                                 T* grad_x) {
  check("patchify_conv_backward_data", s);
  const Sizes z = sizes(s);
  if (s.OH * s.KH != s.H || s.OW * s.KW != s.W)  // rows / columns no patch covers get 0
    HG_CUDA_CHECK(
        cudaMemsetAsync(grad_x, 0, size_t(s.N * s.H * s.W * s.C) * sizeof(T), hg::cuda::stream()));
  const std::shared_ptr<void> w = weight_khwc<T>(s, weight);
  std::shared_ptr<void> gp = scratch(size_t(z.total) * sizeof(T));
  gemm<T>(false, false, z.M, z.Kd, s.O, 1.0f, grad_y, static_cast<const T*>(w.get()), 0.0f,
          static_cast<T*>(gp.get()));
  patch_copy<false>(static_cast<const device_t<T>*>(gp.get()), z.total, s, dev(grad_x));
}

template <typename T>
void patchify_conv_backward_weight(const Conv2dShape& s, const T* x, const T* grad_y,
                                   float* grad_weight) {
  check("patchify_conv_backward_weight", s);
  const Sizes z = sizes(s);
  const std::shared_ptr<void> p = patches(s, x);
  const int64_t n = s.O * z.Kd;
  std::shared_ptr<void> gw = scratch(size_t(n) * sizeof(float));
  gemm_weight_grad(s, z, grad_y, static_cast<const T*>(p.get()), static_cast<float*>(gw.get()));
  weight_order_kernel<false><<<blocks_for(n), 256, 0, hg::cuda::stream()>>>(
      static_cast<const float*>(gw.get()), n, int(s.C), int(s.KH * s.KW), grad_weight);
  HG_CUDA_LAUNCH_CHECK();
}

#define HG_INSTANTIATE(T)                                                                          \
  template void patchify_conv_forward<T>(const Conv2dShape&, const T*, const float*, const float*, \
                                         T*);                                                      \
  template void patchify_conv_backward_data<T>(const Conv2dShape&, const T*, const float*, T*);    \
  template void patchify_conv_backward_weight<T>(const Conv2dShape&, const T*, const T*, float*);
HG_INSTANTIATE(float)
HG_INSTANTIATE(hg::bf16)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cuda
