// The WTConv kernel lab, variants 1 and 2: the level convolution with the Haar analysis formed on
// the fly inside the depthwise conv (the paper's transformation (a)), which the product's fused
// path used before it switched to writing each level's coefficients once and running the depthwise
// kernels on them ("split", docs/fused-wtconv.md section 7: 1.4x faster on the H200). Kept here,
// out of kernels/, so they can be compared again (level_conv_lab.cpp checks and times them).
// Same kernels as they were in kernels/cuda/wtconv_fused.cu and wtconv_vec.cuh (commit ac66f9c).
#include "dev/wtconv/level_conv_lab.h"
#include "kernels/cuda/wtconv_common.cuh"
#include "kernels/cuda/wtconv_vec.cuh"

namespace hg::kernels::cuda::wtconv_detail {
namespace {

constexpr int kTQ = 4;  // outputs per thread along a row (register reuse of the input window)
// the 4-channel level conv holds 4x the window per output: 2 outputs keep it within registers
constexpr int kTQv = 2;

// level: wl[k][c] (float4 over s) = ws[4c+s] * ww[4c+s][k'], k' = flip ? KK-1-k : k.
__global__ void fold_level_kernel(const float* __restrict__ ww, const float* __restrict__ ws, int C,
                                  int KK, bool flip, float4* __restrict__ wl) {
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= int64_t(KK) * C) return;
  const int c = int(idx % C), k = int(idx / C), ks = flip ? KK - 1 - k : k;
  float v[4];
  for (int s = 0; s < 4; ++s) v[s] = ws[4 * c + s] * ww[int64_t(4 * c + s) * KK + ks];
  wl[idx] = make_float4(v[0], v[1], v[2], v[3]);
}

// ---- variant 1: one channel per thread -----------------------------------------------------------
// One thread: channel c, TQ consecutive outputs of one row p of level l's grid. For each kernel row it
// forms the TQ+K-1 Haar coefficients of the input row window once (4 loads each) and applies all K
// taps to all TQ outputs. out (B, hp, wp, C) float4; ll_next (B, hp, wp, C) = sub-band 0 (optional).
template <int KT, int TQ, typename T>
__global__ void level_conv_kernel(HaarSrc<T> src, int B, int K_rt, const float4* __restrict__ wl,
                                  float4* __restrict__ out, float* __restrict__ ll_next) {
  constexpr int KA = KT > 0 ? KT : kMaxK;
  const int K = KT > 0 ? KT : K_rt, r = K / 2;
  const int C = src.C, hp = src.hp, wp = src.wp, nqb = (wp + TQ - 1) / TQ;
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= int64_t(B) * hp * nqb * C) return;
  const int c = int(idx % C);
  int64_t rest = idx / C;
  const int qb = int(rest % nqb);
  rest /= nqb;
  const int p = int(rest % hp), b = int(rest / hp), q0 = qb * TQ;
  float4 acc[TQ];
  float center[TQ];
#pragma unroll
  for (int t = 0; t < TQ; ++t) {
    acc[t] = f4(0.f);
    center[t] = 0.f;
  }
#pragma unroll
  for (int kh = 0; kh < KA; ++kh) {
    if (kh >= K) break;
    const int pp = p + kh - r;
    if (pp < 0 || pp >= hp) continue;
    float4 win[TQ + KA - 1];
#pragma unroll
    for (int m = 0; m < TQ + KA - 1; ++m)
      if (m < TQ + K - 1) win[m] = src.at(b, pp, q0 - r + m, c);
    if (kh == r) {
#pragma unroll
      for (int t = 0; t < TQ; ++t) center[t] = win[t + r].x;
    }
#pragma unroll
    for (int kw = 0; kw < KA; ++kw)
      if (kw < K) {
        const float4 wv = wl[int64_t(kh * K + kw) * C + c];
#pragma unroll
        for (int t = 0; t < TQ; ++t) fma4(acc[t], wv, win[t + kw]);
      }
  }
#pragma unroll
  for (int t = 0; t < TQ; ++t) {
    const int q = q0 + t;
    if (q >= wp) break;
    const int64_t o = ((int64_t(b) * hp + p) * wp + q) * C + c;
    out[o] = acc[t];
    if (ll_next) ll_next[o] = center[t];
  }
}

/// Haar coefficients of 4 channels at position (pp, qq) of the half-resolution grid (hp, wp) of
/// the NHWC tensor src (B, hi, wi, C): o[e] = (LL, s1, s2, s3) of channel c + e. Zero outside the
/// grid (conv padding); a missing second row / column of the last block is zero (analysis padding).
template <typename T>
__device__ __forceinline__ void haar_v4(const T* src, int b, int pp, int qq, int hi, int wi,
                                        int hp, int wp, int C, int c, float4 (&o)[4]) {
  if (pp < 0 || pp >= hp || qq < 0 || qq >= wp) {
#pragma unroll
    for (int e = 0; e < 4; ++e) o[e] = f4(0.f);
    return;
  }
  const int i = 2 * pp, j = 2 * qq;
  const bool i1 = i + 1 < hi, j1 = j + 1 < wi;
  const T* r0 = src + ((int64_t(b) * hi + i) * wi + j) * C + c;
  const T* r1 = r0 + int64_t(wi) * C;
  const float4 z = f4(0.f);
  const float4 a = ld4(r0), bb = j1 ? ld4(r0 + C) : z;
  const float4 cc = i1 ? ld4(r1) : z, d = (i1 && j1) ? ld4(r1 + C) : z;
  o[0] = haar4(a.x, bb.x, cc.x, d.x);
  o[1] = haar4(a.y, bb.y, cc.y, d.y);
  o[2] = haar4(a.z, bb.z, cc.z, d.z);
  o[3] = haar4(a.w, bb.w, cc.w, d.w);
}

// ---- variant 2: 4 channels x TQ outputs per thread -------------------------------------------------
// t(b, p, q, c..c+3) = sum_{kh,kw} wl[kh*K+kw][c+e] * H(src)(p+kh-r, q+kw-r) for q = q0..q0+TQ-1.
// Per kernel row the TQ+K-1 coefficients of the window are formed once (4 float4 loads each) and
// feed all K taps of the TQ outputs from registers. wl (K*K, C) float4 (folded, sub-bands in the
// float4) is read through the read-only cache: a level's weights are a few tens of KB, L1-resident.
// Writes out (B, hp, wp, C) float4 and, when ll_next is given, the LL band (B, hp, wp, C).
template <int KT, int TQ, typename T>
__global__ void __launch_bounds__(256)
    level_conv_v4_kernel(const T* __restrict__ src, int B, int hi, int wi, int C, int hp, int wp,
                         const float4* __restrict__ wl, float4* __restrict__ out,
                         float* __restrict__ ll_next) {
  constexpr int K = KT, r = KT / 2, NW = TQ + KT - 1;
  const int cv = blockIdx.y * blockDim.x + threadIdx.x, c = 4 * cv;
  const int nqb = (wp + TQ - 1) / TQ;
  const int64_t tile = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  if (c >= C || tile >= int64_t(B) * hp * nqb) return;
  const int qb = int(tile % nqb);
  const int64_t bp = tile / nqb;
  const int p = int(bp % hp), b = int(bp / hp), q0 = qb * TQ;
  float4 acc[TQ][4];
  float4 center[TQ];
#pragma unroll
  for (int t = 0; t < TQ; ++t) {
    center[t] = f4(0.f);
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[t][e] = f4(0.f);
  }
  // (K = 5: ~185 registers, 8 warps per SM, each with 24 independent 16-byte loads per row in
  // flight; K = 7 would spill, so the product took this path for K = 3 and 5 only)
#pragma unroll
  for (int kh = 0; kh < K; ++kh) {
    const int pp = p + kh - r;
    if (pp < 0 || pp >= hp) continue;  // a zero-padding row adds nothing
    float4 win[NW][4];
#pragma unroll
    for (int m = 0; m < NW; ++m) haar_v4(src, b, pp, q0 - r + m, hi, wi, hp, wp, C, c, win[m]);
    if (kh == r) {
#pragma unroll
      for (int t = 0; t < TQ; ++t)
        center[t] = make_float4(win[t + r][0].x, win[t + r][1].x, win[t + r][2].x, win[t + r][3].x);
    }
#pragma unroll
    for (int kw = 0; kw < K; ++kw) {
      const float4* wp4 = wl + int64_t(kh * K + kw) * C + c;
      float4 wv[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) wv[e] = __ldg(wp4 + e);
#pragma unroll
      for (int t = 0; t < TQ; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) fma4(acc[t][e], wv[e], win[t + kw][e]);
    }
  }
#pragma unroll
  for (int t = 0; t < TQ; ++t) {
    const int q = q0 + t;
    if (q >= wp) break;
    const int64_t o = ((int64_t(b) * hp + p) * wp + q) * C + c;
#pragma unroll
    for (int e = 0; e < 4; ++e) out[o + e] = acc[t][e];
    if (ll_next) st4(ll_next + o, center[t]);
  }
}

}  // namespace
}  // namespace hg::kernels::cuda::wtconv_detail

namespace hg::lab {

using namespace hg::kernels::cuda;
using namespace hg::kernels::cuda::wtconv_detail;

bool level_conv_otf(int variant, const Tensor& x, const Tensor& ww, const Tensor& ws, int K,
                    const Tensor& t, const Tensor& ll) {
  const int B = int(x.size(0)), hi = int(x.size(1)), wi = int(x.size(2)), C = int(x.size(3));
  const int hp = (hi + 1) / 2, wp = (wi + 1) / 2, KK = K * K;
  HG_CHECK(K >= 1 && K % 2 == 1 && K <= kMaxK, "level_conv_otf: K must be odd in [1, ", kMaxK,
           "], got ", K);
  HG_CHECK(t.shape() == Shape({B, hp, wp, C, 4}) && ll.shape() == Shape({B, hp, wp, C}),
           "level_conv_otf: t must be (B, hp, wp, C, 4) and ll (B, hp, wp, C), got ", t.describe(),
           " and ", ll.describe());
  const float* src = x.data<float>();
  float4* out = reinterpret_cast<float4*>(t.data<float>());
  float* ll_next = ll.data<float>();
  if (variant == 2 && !(C % 4 == 0 && (K == 3 || K == 5) && aligned16(src) && aligned16(out) &&
                        aligned16(ll_next)))
    return false;  // the 4-channel kernel takes C % 4 == 0, K = 3 or 5 only
  HG_CHECK(variant == 1 || variant == 2, "level_conv_otf: no variant ", variant);
  Tensor wl = scratch_tensor({KK, C, 4});
  fold_level_kernel<<<blocks_for(int64_t(KK) * C), 256>>>(
      ww.data<float>(), ws.data<float>(), C, KK, /*flip=*/false,
      reinterpret_cast<float4*>(wl.data<float>()));
  HG_CUDA_LAUNCH_CHECK();
  const float4* w4 = reinterpret_cast<const float4*>(wl.data<float>());
  dispatch_k(kWTConvKs, K, [&](auto kt) {
    constexpr int KT = decltype(kt)::value;
    if constexpr (KT == 3 || KT == 5) {
      if (variant == 2) {
        const VecLaunch v = vec_launch(C, int64_t(B) * hp * ((wp + kTQv - 1) / kTQv));
        level_conv_v4_kernel<KT, kTQv, float>
            <<<v.grid, v.block>>>(src, B, hi, wi, C, hp, wp, w4, out, ll_next);
        HG_CUDA_LAUNCH_CHECK();
        return;
      }
    }
    const int64_t n = int64_t(B) * hp * ((wp + kTQ - 1) / kTQ) * C;
    level_conv_kernel<KT, kTQ, float><<<blocks_for(n), 256>>>(
        HaarSrc<float>{src, hi, wi, C, hp, wp}, B, K, w4, out, ll_next);
    HG_CUDA_LAUNCH_CHECK();
  });
  return true;
}

}  // namespace hg::lab
