// Device building blocks shared by the fused and the unfused (reference-order) WTConv CUDA paths:
// storage-type loads (T = float or __nv_bfloat16, arithmetic always in float), the Haar 2x2
// transform, input "sources" (plain NHWC or Haar-on-the-fly), the deterministic depthwise
// weight-gradient kernel (second stage: reduce_slices.cuh), launch helpers.
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

/// A plain NHWC tensor (B, h, w, C) read with zero padding outside [0,h) x [0,w).
template <typename T>
struct PlainSrc {
  const T* p;
  int h, w, C;
  static constexpr int NS = 1;
  __device__ __forceinline__ void load(int b, int i, int j, int c, float (&v)[1]) const {
    v[0] = (i >= 0 && i < h && j >= 0 && j < w) ? ld(p + ((int64_t(b) * h + i) * w + j) * C + c) : 0.f;
  }
};

/// The Haar coefficients of an NHWC tensor (B, hi, wi, C), formed on the fly: position (p, q) of
/// the half-resolution grid (hp, wp) = (ceil(hi/2), ceil(wi/2)); zero outside that grid (conv
/// padding) and zero rows/columns past hi, wi inside the last block (analysis padding).
template <typename T>
struct HaarSrc {
  const T* p;
  int hi, wi, C, hp, wp;
  static constexpr int NS = 4;
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
  __device__ __forceinline__ void load(int b, int pp, int qq, int c, float (&v)[4]) const {
    const float4 t = at(b, pp, qq, c);
    v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;
  }
};

// ---- deterministic depthwise weight gradient ------------------------------------------------------
// dW[kh][kw][c][s] = sum_{b,p,q} G_s(b,p,q,c) * X_s(b, p+kh-r, q+kw-r, c), r = K/2, X zero-padded.
// Grid: x = kh, y = channel chunks of 32, z = row groups (rows are (b, p) pairs); kh varies fastest
// so the K blocks that read the same rows run together and share them through L2. Block (32, kWarps).
// Each thread slides a K-wide window of X along one row (one new X load per q), accumulates K*NS sums
// in registers; the warps of a block are summed in a fixed order in shared memory and each block
// writes its own slice partial[z][kh][kw][c][s]: no atomics, so the result is bit-reproducible.
// bias_partial[z][c] (optional, NS == 1): sum of G over the block's rows (written by kh == 0 blocks).
constexpr int kWgradWarps = 4;

template <int KT, class XS, class GS>
__global__ void __launch_bounds__(32 * kWgradWarps)
    wgrad_kernel(XS xs, GS gs, int B, int hp, int wp, int C, int K_rt, int rows_per_block,
                 float* __restrict__ partial, float* __restrict__ bias_partial) {
  constexpr int NS = XS::NS;
  constexpr int KA = KT > 0 ? KT : kMaxK;  // array extent
  const int K = KT > 0 ? KT : K_rt, r = K / 2;
  extern __shared__ float smem[];  // [kWgradWarps][K*NS][32]
  const int lane = threadIdx.x, warp = threadIdx.y;
  const int c = blockIdx.y * 32 + lane, kh = blockIdx.x;
  const bool active = c < C;
  float acc[KA][NS];
  float gsum = 0.f;
#pragma unroll
  for (int k = 0; k < KA; ++k)
#pragma unroll
    for (int s = 0; s < NS; ++s) acc[k][s] = 0.f;
  const int64_t R = int64_t(B) * hp;
  const int64_t row0 = int64_t(blockIdx.z) * rows_per_block;
  const int64_t row1 = std::min<int64_t>(R, row0 + rows_per_block);
  if (active) {
    for (int64_t row = row0 + warp; row < row1; row += kWgradWarps) {
      const int b = int(row / hp), p = int(row % hp), pp = p + kh - r;
      const bool xrow = pp >= 0 && pp < hp;
      if (!xrow && !(bias_partial && kh == 0)) continue;  // a zero X row adds nothing
      float win[KA][NS];
#pragma unroll
      for (int m = 0; m + 1 < KA; ++m)
        if (m + 1 < K) xs.load(b, pp, m - r, c, win[m + 1]);
      // unrolled so that the loads of several steps are in flight together (latency-bound sweep)
#pragma unroll 4
      for (int q = 0; q < wp; ++q) {
#pragma unroll
        for (int m = 0; m + 1 < KA; ++m)
          if (m + 1 < K) {
#pragma unroll
            for (int s = 0; s < NS; ++s) win[m][s] = win[m + 1][s];
          }
        xs.load(b, pp, q + r, c, win[K - 1]);
        float g[NS];
        gs.load(b, p, q, c, g);
        if (bias_partial && kh == 0) gsum += g[0];
        if (!xrow) continue;
#pragma unroll
        for (int kw = 0; kw < KA; ++kw)
          if (kw < K) {
#pragma unroll
            for (int s = 0; s < NS; ++s) acc[kw][s] = fmaf(g[s], win[kw][s], acc[kw][s]);
          }
      }
    }
  }
  // fixed-order sum over the block's warps
  const int nv = K * NS;
#pragma unroll
  for (int kw = 0; kw < KA; ++kw)
    if (kw < K) {
#pragma unroll
      for (int s = 0; s < NS; ++s) smem[(warp * nv + kw * NS + s) * 32 + lane] = acc[kw][s];
    }
  __syncthreads();
  const int tid = warp * 32 + lane;
  for (int v = tid; v < nv * 32; v += 32 * kWgradWarps) {
    const int vl = v % 32, vi = v / 32, cc = blockIdx.y * 32 + vl;
    float sum = 0.f;
    for (int w = 0; w < kWgradWarps; ++w) sum += smem[(w * nv + vi) * 32 + vl];
    if (cc < C) {
      const int kw = vi / NS, s = vi % NS;
      partial[((int64_t(blockIdx.z) * K + kh) * K + kw) * C * NS + int64_t(cc) * NS + s] = sum;
    }
  }
  if (bias_partial && kh == 0) {
    __syncthreads();
    smem[warp * 32 + lane] = gsum;
    __syncthreads();
    if (warp == 0 && active) {
      float sum = 0.f;
      for (int w = 0; w < kWgradWarps; ++w) sum += smem[w * 32 + lane];
      bias_partial[int64_t(blockIdx.z) * C + c] = sum;
    }
  }
}

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

/// Result of a weight-gradient launch: sums[K*K][C*NS] (already reduced) and, when asked, the
/// bias sums[C].
struct WgradResult {
  Tensor sums, bias;
};

/// Runs wgrad_kernel + the fixed-order reduction (K: kWTConvKs compiled, else run-time K).
template <class XS, class GS>
WgradResult run_wgrad(const XS& xs, const GS& gs, int B, int hp, int wp, int C, int K, bool bias);

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

// ---- template definition (header so both .cu files instantiate what they use) --------------------
template <class XS, class GS>
WgradResult run_wgrad(const XS& xs, const GS& gs, int B, int hp, int wp, int C, int K, bool bias) {
  constexpr int NS = XS::NS;
  static_assert(GS::NS == XS::NS, "wgrad: sources differ in sub-bands");
  HG_CHECK(K >= 1 && K <= kMaxK && K % 2 == 1, "wtconv wgrad: K must be odd in [1, ", kMaxK, "], got ", K);
  const int chunks = (C + 31) / 32;
  const int64_t R = int64_t(B) * hp;
  // enough blocks to fill the GPU a few times over; the split depends only on the shape and the
  // device (bit-identical run to run)
  const int64_t want = std::max<int64_t>(
      1, (8 * int64_t(hg::cuda::multiprocessor_count())) / std::max(1, chunks * K));
  const int gy = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(R, want)));
  const int rows_per_block = static_cast<int>((R + gy - 1) / gy);
  const int64_t n = int64_t(K) * K * C * NS;
  Tensor partial = workspace({gy, n});
  Tensor bias_partial = bias ? workspace({gy, C}) : Tensor();
  const size_t smem = sizeof(float) * kWgradWarps * K * NS * 32;
  dispatch_k(kWTConvKs, K, [&](auto kt) {
    constexpr int KT = decltype(kt)::value;
    dim3 grid(K, chunks, gy), block(32, kWgradWarps);
    wgrad_kernel<KT><<<grid, block, smem, hg::cuda::stream()>>>(
        xs, gs, B, hp, wp, C, K, rows_per_block, partial.data<float>(),
        bias ? bias_partial.data<float>() : nullptr);
    HG_CUDA_LAUNCH_CHECK();
  });
  WgradResult res;
  res.sums = workspace({int64_t(K) * K, int64_t(C) * NS});
  reduce_slices(partial.data<float>(), gy, n, res.sums.data<float>());
  if (bias) {
    res.bias = workspace({C});
    reduce_slices(bias_partial.data<float>(), gy, int64_t(C), res.bias.data<float>());
  }
  return res;
}

}  // namespace hg::kernels::cuda::wtconv_detail
