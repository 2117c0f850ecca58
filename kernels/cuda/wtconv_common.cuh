// Device building blocks shared by the fused and the unfused (reference-order) WTConv CUDA paths:
// storage-type loads (T = float or __nv_bfloat16, arithmetic always in float), the Haar 2x2
// transform, the Haar coefficients read on the fly (HaarSrc), the weight-gradient unfolds, launch
// helpers. (The reference order's weight gradients, its scales' included, run the depthwise
// weight gradient of kernels/depthwise_conv.h.)
// Compiled as C++17 by nvcc: include only core/tensor.h, core/error.h, kernels/*.h,
// kernels/cuda/*.h.
//
// Layouts (all NHWC, C fastest): an activation (B, h, w, C); in the reference-order path a
// "coefficient" tensor (B, hp, wp, C, 4) f32 whose last index is the sub-band s (so it is also the
// PyTorch channel 4c+s, and one float4 per (position, channel)); the fused path keeps its
// coefficients as sub-band planes (B, hp, wp, 4, C) of the activations' storage type instead
// (wtconv_vec.cuh says why). Folded weights are (K*K, C) for the base path, always f32.
#pragma once

#include <algorithm>
#include <type_traits>
#include <utility>
#include <cstdint>
#include <vector>

#include "core/dispatch.h"
#include "core/error.h"
#include "core/tensor.h"
#include "kernels/cuda/bf16.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/dispatch_k.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/reduce_slices.cuh"
#include "kernels/wtconv.h"

namespace hg::kernels::cuda::wtconv_detail {

// Largest K the generic (run-time K) instantiation supports; K = 1, 3, 5, 7, 9 are compiled
// separately with the window and accumulator arrays sized at compile time (kernels/wtconv.h).
constexpr int kMaxK = kWTConvMaxK;
// Most levels the one-pass synthesis takes as kernel arguments (a 2^12 = 4096-pixel-wide map).
constexpr int kMaxLevels = kWTConvMaxLevels;

/// Every level's parameters and, for the backward, their gradients (a kernel argument).
struct LevelParams {
  const float* ww[kMaxLevels];  // wavelet_weight[l] (4C, K*K), channel e = 4c + s
  const float* ws[kMaxLevels];  // wavelet_scale[l] (4C)
  float* gww[kMaxLevels];       // their gradients (backward only)
  float* gws[kMaxLevels];
};

// ---- storage I/O: activations (x, y, grad_y, grad_x) are T = float or __nv_bfloat16, and so are
// the fused path's coefficient planes, level outputs and LL pyramids (kernels/wtconv.h); the
// reference-order path's intermediates, the weight-gradient sums and every register are float.
// Loads widen, stores round to nearest even (kernels/cuda/bf16.cuh).
template <typename T>
__device__ __forceinline__ float ld(const T* p) { return to_f32(*p); }
template <typename T>
__device__ __forceinline__ void st(T* p, float v) { *p = from_f32<T>(v); }

/// The host element type of a device storage type (float -> float, __nv_bfloat16 -> hg::bf16), as
/// the host entry points of kernels/depthwise_conv.h take it.
template <typename T>
using host_t = std::conditional_t<std::is_same_v<T, float>, float, hg::bf16>;

/// The typed data pointer of a float or bf16 tensor, as the kernels take it (T = float or
/// __nv_bfloat16; Tensor::data checks the dtype).
template <typename T>
inline T* typed(const Tensor& t) {
  if constexpr (std::is_same_v<T, float>) return t.data<float>();
  else return dev(t.data<hg::bf16>());
}
/// The same pointer as the host type (for kernels/depthwise_conv.h).
template <typename T>
inline host_t<T>* host_typed(const Tensor& t) {
  return t.data<host_t<T>>();
}
/// The DType of storage type T.
template <typename T>
constexpr DType dtype_of_storage() {
  return std::is_same_v<T, float> ? DType::f32 : DType::bf16;
}

__device__ __forceinline__ float4 f4(float v) { return make_float4(v, v, v, v); }
__device__ __forceinline__ void fma4(float4& acc, const float4& w, const float4& v) {
  acc.x = fmaf(w.x, v.x, acc.x);
  acc.y = fmaf(w.y, v.y, acc.y);
  acc.z = fmaf(w.z, v.z, acc.z);
  acc.w = fmaf(w.w, v.w, acc.w);
}
__device__ __forceinline__ void add4(float4& acc, const float4& v) {
  acc.x += v.x;
  acc.y += v.y;
  acc.z += v.z;
  acc.w += v.w;
}

/// One filter's folded-weight gradient unfolded: v (KK taps, tap k at v[k * vs]), gw[k] = scale *
/// v[k * vs]; returns sum_k v[k * vs] w[k] (fmaf in tap order). Loads go in chunks of 8 taps, so a
/// thread waits about KK / 8 memory latencies instead of KK (unfold_levels_kernel: 10.7 -> 8.7 us
/// at 96/56/5, ncu, seventeenth session).
__device__ inline float unfold_filter(const float* __restrict__ v, int vs,
                                      const float* __restrict__ w, float scale, int KK,
                                      float* __restrict__ gw) {
  constexpr int kChunk = 8;
  float gs = 0.f;
  for (int k0 = 0; k0 < KK; k0 += kChunk) {
    float vv[kChunk], wv[kChunk];
#pragma unroll
    for (int u = 0; u < kChunk; ++u) {
      vv[u] = k0 + u < KK ? v[(k0 + u) * vs] : 0.f;
      wv[u] = k0 + u < KK ? w[k0 + u] : 0.f;
    }
#pragma unroll
    for (int u = 0; u < kChunk; ++u)
      if (k0 + u < KK) {
        gw[k0 + u] = scale * vv[u];
        gs = fmaf(vv[u], wv[u], gs);
      }
  }
  return gs;
}

/// unfold_filter by one warp: lane j takes taps j, j + 32, ... (coalesced loads and stores), and
/// the lanes' partial dot products are summed by a fixed butterfly, so every lane returns the same
/// sum_k v[k] w[k], bit-identical run to run (in another order than unfold_filter's tap order).
/// One thread a filter, each waiting on its own KK / 8 chains of strided loads, left the
/// split path's unfolds at 5-9 us a launch for a few thousand values (H200, twentieth session).
__device__ inline float unfold_filter_warp(const float* __restrict__ v, const float* __restrict__ w,
                                           float scale, int KK, float* __restrict__ gw) {
  float part = 0.f;
  for (int k = int(threadIdx.x) & 31; k < KK; k += 32) {
    const float vk = v[k];
    gw[k] = scale * vk;
    part = fmaf(vk, w[k], part);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) part += __shfl_xor_sync(0xffffffffu, part, o);
  return part;
}

/// Haar analysis of one 2x2 block (a top-left, b top-right, c bottom-left, d bottom-right), exactly
/// docs/wtconv-operator.md: (LL, top-bottom, left-right, diagonal), each / 2.
__device__ __forceinline__ float4 haar4(float a, float b, float c, float d) {
  return make_float4(0.5f * (a + b + c + d), 0.5f * (a + b - c - d), 0.5f * (a - b + c - d),
                     0.5f * (a - b - c + d));
}
/// The synthesis value at parity (row bit rb, column bit cb) of a 2x2 block, without the 1/2:
/// s0 + sr*s1 + sc*s2 + sr*sc*s3 with sr = rb ? -1 : 1, sc = cb ? -1 : 1.
__device__ __forceinline__ float unhaar_at(const float4& t, int rb, int cb) {
  const float sr = rb ? -1.f : 1.f, sc = cb ? -1.f : 1.f;
  return t.x + sr * t.y + sc * (t.z + sr * t.w);
}

/// The Haar coefficients of an NHWC tensor (B, hi, wi, C), formed on the fly: position (p, q) of
/// the half-resolution grid (hp, wp) = (ceil(hi/2), ceil(wi/2)); zero outside that grid (conv
/// padding) and zero rows/columns past hi, wi inside the last block (analysis padding).
template <typename T>
struct HaarSrc {
  const T* p;
  int hi, wi, C, hp, wp;
  __device__ __forceinline__ float4 at(int b, int pp, int qq, int c) const {
    if (pp < 0 || pp >= hp || qq < 0 || qq >= wp) return f4(0.f);
    const int i = 2 * pp, j = 2 * qq;
    const bool i1 = i + 1 < hi, j1 = j + 1 < wi;
    const T* r0 = p + ((int64_t(b) * hi + i) * wi + j) * C + c;
    const T* r1 = r0 + int64_t(wi) * C;
    const float a = ld(r0), bb = j1 ? ld(r0 + C) : 0.f;
    const float cc = i1 ? ld(r1) : 0.f, d = (i1 && j1) ? ld(r1 + C) : 0.f;
    return haar4(a, bb, cc, d);
  }
};

// G = dL/dy scattered back to input resolution for stride > 1 (zeros between the samples).
template <typename T>
__global__ void upsample_kernel(const T* __restrict__ gy, int B, int H, int W, int C, int Ho,
                                int Wo, int stride, T* __restrict__ g) {
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= int64_t(B) * H * W * C) return;
  const int c = int(idx % C);
  int64_t rest = idx / C;
  const int j = int(rest % W);
  rest /= W;
  const int i = int(rest % H), b = int(rest / H);
  g[idx] = (i % stride == 0 && j % stride == 0)
               ? gy[((int64_t(b) * Ho + i / stride) * Wo + j / stride) * C + c]
               : from_f32<T>(0.f);
}

/// A workspace tensor of f32 on the GPU (Category::workspace), never cudaMalloc directly.
Tensor workspace(const Shape& shape);
/// The same of storage type T (float or __nv_bfloat16).
template <typename T>
Tensor workspace_of(const Shape& shape) {
  return scratch_tensor(shape, dtype_of_storage<T>());
}

/// Checks the contract of kernels/wtconv.h (NHWC f32 or bf16 CUDA x, f32 PyTorch-layout weights);
/// returns K.
int check_inputs(const char* op, const Tensor& x, const WTConvWeights& w, int stride);
/// One level grid h x w as the kernels take it (int32: kernels/wtconv.h).
struct LevelGrid {
  int h, w;
};
/// Grid l of d (l = 0..L; grid 0 is x's H x W), d the layer's WTConvLevels (kernels/wtconv.h).
inline LevelGrid grid_of(const WTConvLevels& d, int l) {
  return LevelGrid{int(d.h[size_t(l)]), int(d.w[size_t(l)])};
}

// ---- the two implementations (reference order in wtconv_unfused.cu, fused in wtconv_fused.cu) ----
/// Checks grad_y against x (same dtype, the output shape of `stride`, on cuda).
void check_grad_y(const char* op, const Tensor& x, const Tensor& grad_y, int stride);
/// The output tensor: `out` when defined (after checking it is a dense tensor of that shape and
/// dtype on cuda), else a new one.
Tensor output_tensor(const char* op, const char* what, const Shape& shape, DType dtype,
                     const Tensor& out);

/// The reference order; saved: as kernels::cuda::wtconv_forward / wtconv_backward take it.
Tensor unfused_forward(const Tensor& x, const WTConvWeights& w, int stride, const Tensor& out,
                       WTConvSaved* saved);
WTConvGrads unfused_backward(const Tensor& x, const WTConvWeights& w, const Tensor& grad_y,
                             int stride, bool need_grad_x, const Tensor& grad_x_out,
                             const WTConvSaved* saved);

}  // namespace hg::kernels::cuda::wtconv_detail
