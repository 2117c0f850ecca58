// Vectorised fast paths of the fused WTConv kernels (4 channels per thread, float4 loads, a
// register tile of outputs along W): the one-pass synthesis fused with the base conv. Activations
// are T = float (16-byte accesses of 4 channels) or __nv_bfloat16 (8-byte accesses of 4 channels),
// everything else float; for bf16 with C % 8 == 0 there are 8-channel (16-byte) versions of the
// synthesis and of the Haar pass at the end of this file. Used when C % 4 == 0, the pointers are
// aligned, K is a compiled constant (3, 5, 7, 9) and stride == 1; wtconv_fused.cu keeps the
// one-channel kernels for every other case. Same math as those kernels, fewer instructions: the
// one-channel versions spent most of their issue slots on scalar loads and 64-bit index
// arithmetic, which the 4-channel vectors amortise 4x (docs/fused-wtconv.md). (The 4-channel
// on-the-fly level conv that used to live here is in the kernel lab, dev/wtconv/.)
// Compiled as C++17 by nvcc: include only core/tensor.h, core/error.h, kernels/*.h, kernels/cuda/*.h.
//
// Thread mapping, after kernels/cuda/depthwise_conv.cu: block (cvb, ty); lane x takes
// channel vector cv = blockIdx.y * cvb + threadIdx.x (channels 4cv .. 4cv+3, one 16-byte load per
// pixel, consecutive lanes on consecutive memory), threadIdx.y + blockIdx.x * ty picks the tile =
// (b, row, column block) of TW consecutive outputs.
#pragma once

#include "kernels/cuda/wtconv_common.cuh"

namespace hg::kernels::cuda::wtconv_detail {

// ---- 4-channel storage I/O: one 16-byte (float) or 8-byte (bf16) access, float in registers -----
/// Two bf16 (the low half of the word is the element at the lower address) -> float2.
__device__ __forceinline__ float2 unpack_bf16x2(uint32_t u) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u));
}
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // round to nearest even
  return *reinterpret_cast<const uint32_t*>(&v);
}
// ld4 / st4: bf16.cuh's load4 / store4 with the 4 values as one float4
template <typename T>
__device__ __forceinline__ float4 ld4(const T* p) {
  float v[4];
  load4(p, v);
  return make_float4(v[0], v[1], v[2], v[3]);
}
template <typename T>
__device__ __forceinline__ void st4(T* p, const float4& v) {
  const float a[4] = {v.x, v.y, v.z, v.w};
  store4(p, a);
}
/// 8 floats -> 8 bf16 channels (one 16-byte store, round to nearest even).
__device__ __forceinline__ void st8(__nv_bfloat16* p, const float (&v)[8]) {
  *reinterpret_cast<uint4*>(p) = make_uint4(pack_bf16x2(v[0], v[1]), pack_bf16x2(v[2], v[3]),
                                            pack_bf16x2(v[4], v[5]), pack_bf16x2(v[6], v[7]));
}
/// 8 bf16 channels (one 16-byte load) -> 8 floats.
__device__ __forceinline__ void ld8(const __nv_bfloat16* p, float (&v)[8]) {
  const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 f = unpack_bf16x2(w[k]);
    v[2 * k] = f.x;
    v[2 * k + 1] = f.y;
  }
}

/// Block shape for the 4-channel kernels: cvb channel vectors across x (at most a warp), ty tiles.
struct VecLaunch {
  dim3 grid, block;
};
/// V channels per thread (C % V == 0), at most max_cvb vectors across a block row.
inline VecLaunch vec_launch(int C, int64_t tiles, int threads = 256, int V = 4, int max_cvb = 32) {
  const int cv = C / V;
  const int cvb = std::max(1, std::min(cv, max_cvb));
  const int ty = std::max(1, threads / cvb);
  const int64_t gx = (tiles + ty - 1) / ty, gy = (cv + cvb - 1) / cvb;
  HG_CHECK(gx <= INT32_MAX && gy <= 65535, "wtconv (cuda, fused): grid (", gx, ", ", gy,
           ") too large for C ", C, " and ", tiles, " tiles");
  return VecLaunch{dim3(unsigned(gx), unsigned(gy)), dim3(unsigned(cvb), unsigned(ty))};
}

// ---- (b) base conv + one-pass synthesis, 4 channels x TW outputs per thread (stride 1) -----------
// y(b, i, j, c..) = bf + sum_k wb[k] x(i+kh-r, j+kw-r) + sum_l 2^-(l+1) unhaar(t_l(i>>(l+1),
// j>>(l+1)); bits l of i, j). The folded base filters of the block's channels are staged in shared
// memory as [tap][channel] (a warp reads one tap as one contiguous row). Tiles start at multiples of
// TW = 8, so level l's ancestors of the tile are the 8 >> (l+1) (at least 1) consecutive positions
// from j0 >> (l+1): each is loaded once per thread and expanded to the pixels below it.
constexpr int kSynthTW = 8;

/// The synthesis values of one level-l coefficient for 4 channels, times f, for row sign sr
/// (fr = f * sr): u0 for even columns (sc = +1), u1 for odd ones (sc = -1), from
/// f * (t0 + sr t1 + sc (t2 + sr t3)).
__device__ __forceinline__ void unhaar_pair(const float4& tv, float f, float fr, float& u0,
                                            float& u1) {
  const float A = fmaf(fr, tv.y, f * tv.x), Bv = fmaf(fr, tv.w, f * tv.z);
  u0 = A + Bv;
  u1 = A - Bv;
}

/// Adds level l's contribution to the TW = 8 accumulators: NA ancestors of 8 / NA pixels each.
/// tl is t_l (B, hp, wp, C) float4; rowbase = (b * hp + (i >> (l+1))) * wp.
template <int NA>
__device__ __forceinline__ void synth_add_level(float4 (&acc)[kSynthTW], const float4* tl,
                                                int64_t rowbase, int wp, int C, int c, int j0,
                                                int l, float fr, float f) {
  constexpr int PER = kSynthTW / NA;
  const int qa0 = j0 >> (l + 1);
#pragma unroll
  for (int a = 0; a < NA; ++a) {
    const int q = qa0 + a;
    if (q >= wp) break;  // only pixels past W would read it
    const float4* tp = tl + (rowbase + q) * C + c;
    float4 u0, u1;
    unhaar_pair(__ldg(tp + 0), f, fr, u0.x, u1.x);
    unhaar_pair(__ldg(tp + 1), f, fr, u0.y, u1.y);
    unhaar_pair(__ldg(tp + 2), f, fr, u0.z, u1.z);
    unhaar_pair(__ldg(tp + 3), f, fr, u0.w, u1.w);
#pragma unroll
    for (int k = 0; k < PER; ++k) {
      const int t = a * PER + k;
      const float4 u = (((j0 + t) >> l) & 1) ? u1 : u0;
      acc[t].x += u.x;
      acc[t].y += u.y;
      acc[t].z += u.z;
      acc[t].w += u.w;
    }
  }
}

/// Level outputs for the vectorised synthesis (kernel argument).
struct LevelsV {
  const float4* t[kMaxLevels];
  int hp[kMaxLevels], wp[kMaxLevels];
  int L;
};

template <int KT, typename T>
__global__ void __launch_bounds__(256)
    synth_v4_kernel(const T* __restrict__ x, int B, int H, int W, int C,
                    const float* __restrict__ wb, const float* __restrict__ bf, LevelsV lv,
                    T* __restrict__ y) {
  constexpr int K = KT, r = KT / 2, TW = kSynthTW, NW = TW + KT - 1;
  extern __shared__ float4 smem_f4[];  // [K*K][CB] floats, 16-byte aligned
  float* wsm = reinterpret_cast<float*>(smem_f4);
  const int CB = blockDim.x * 4, c0 = blockIdx.y * CB;
  {
    const int nthreads = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int present = min(CB, C - c0);
    for (int e = tid; e < CB * K * K; e += nthreads) {
      const int k = e / CB, cl = e % CB;  // wb is (K*K, C): contiguous along cl
      wsm[e] = cl < present ? wb[int64_t(k) * C + c0 + cl] : 0.f;
    }
  }
  __syncthreads();
  const int cl = threadIdx.x * 4, c = c0 + cl;
  const int ntw = (W + TW - 1) / TW;
  const int64_t tile = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  if (c >= C || tile >= int64_t(B) * H * ntw) return;
  const int tw = int(tile % ntw);
  const int64_t bi = tile / ntw;
  const int i = int(bi % H), b = int(bi / H), j0 = tw * TW;

  float4 acc[TW];  // 4 channels of output t
  const float4 bias = bf ? *reinterpret_cast<const float4*>(bf + c) : f4(0.f);
#pragma unroll
  for (int t = 0; t < TW; ++t) acc[t] = bias;
#pragma unroll
  for (int kh = 0; kh < K; ++kh) {
    const int ii = i + kh - r;
    if (ii < 0 || ii >= H) continue;
    const T* row = x + (int64_t(b) * H + ii) * W * C + c;
    float4 win[NW];
#pragma unroll
    for (int m = 0; m < NW; ++m) {
      const int jj = j0 - r + m;
      win[m] = (jj >= 0 && jj < W) ? ld4(row + int64_t(jj) * C) : f4(0.f);
    }
#pragma unroll
    for (int kw = 0; kw < K; ++kw) {
      const float4 wv = *reinterpret_cast<const float4*>(wsm + (kh * K + kw) * CB + cl);
#pragma unroll
      for (int t = 0; t < TW; ++t) fma4(acc[t], wv, win[t + kw]);
    }
  }
  float f = 0.5f;
  for (int l = 0; l < lv.L; ++l, f *= 0.5f) {
    const int64_t rowbase = (int64_t(b) * lv.hp[l] + (i >> (l + 1))) * lv.wp[l];
    const float fr = ((i >> l) & 1) ? -f : f;
    if (l == 0)
      synth_add_level<4>(acc, lv.t[l], rowbase, lv.wp[l], C, c, j0, l, fr, f);
    else if (l == 1)
      synth_add_level<2>(acc, lv.t[l], rowbase, lv.wp[l], C, c, j0, l, fr, f);
    else
      synth_add_level<1>(acc, lv.t[l], rowbase, lv.wp[l], C, c, j0, l, fr, f);
  }
  T* out = y + (int64_t(b) * H + i) * W * C + c;
#pragma unroll
  for (int t = 0; t < TW; ++t)
    if (j0 + t < W) st4(out + int64_t(j0 + t) * C, acc[t]);
}

// ---- (b') base conv + one-pass synthesis for bf16 activations, 8 channels per thread ------------
// The same sum as synth_v4_kernel, per output in the same order (base taps kh, kw ascending, then
// levels 0, 1, ...), with one 16-byte access per pixel (8 bf16 channels). Holding the whole
// (TW + K - 1)-pixel window of a kernel row for 8 channels would take up to 128 registers next to
// the 64 accumulators, so this kernel streams the row instead: it keeps the row's K folded weights
// (8K floats), loads one pixel at a time and adds it into every output of the tile that uses it.
// Used for T = bf16 when C % 8 == 0, x / y 16-byte aligned, stride 1 and K in 3..9. The block's
// filters are staged in shared memory as in synth_v4_kernel, CB = 8 * blockDim.x <= 128 channels
// (the same shared memory as the 4-channel kernel's 32 x 4).
constexpr int kSynthV8Cvb = 16;

/// synth_add_level for 8 channels: acc[t][e], tl as in synth_add_level.
template <int NA>
__device__ __forceinline__ void synth_add_level8(float (&acc)[kSynthTW][8], const float4* tl,
                                                 int64_t rowbase, int wp, int C, int c, int j0,
                                                 int l, float fr, float f) {
  constexpr int PER = kSynthTW / NA;
  const int qa0 = j0 >> (l + 1);
#pragma unroll
  for (int a = 0; a < NA; ++a) {
    const int q = qa0 + a;
    if (q >= wp) break;  // only pixels past W would read it
    const float4* tp = tl + (rowbase + q) * C + c;
    float u0[8], u1[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) unhaar_pair(__ldg(tp + e), f, fr, u0[e], u1[e]);
#pragma unroll
    for (int k = 0; k < PER; ++k) {
      const int t = a * PER + k;
      const bool odd = ((j0 + t) >> l) & 1;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[t][e] += odd ? u1[e] : u0[e];
    }
  }
}

template <int KT>
__global__ void __launch_bounds__(256)
    synth_v8_kernel(const __nv_bfloat16* __restrict__ x, int B, int H, int W, int C,
                    const float* __restrict__ wb, const float* __restrict__ bf, LevelsV lv,
                    __nv_bfloat16* __restrict__ y) {
  constexpr int K = KT, r = KT / 2, TW = kSynthTW, NW = TW + KT - 1;
  extern __shared__ float4 smem_f4[];  // [K*K][CB] floats, 16-byte aligned
  float* wsm = reinterpret_cast<float*>(smem_f4);
  const int CB = blockDim.x * 8, c0 = blockIdx.y * CB;
  {
    const int nthreads = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int present = min(CB, C - c0);
    for (int e = tid; e < CB * K * K; e += nthreads) {
      const int k = e / CB, cl = e % CB;  // wb is (K*K, C): contiguous along cl
      wsm[e] = cl < present ? wb[int64_t(k) * C + c0 + cl] : 0.f;
    }
  }
  __syncthreads();
  const int cl = threadIdx.x * 8, c = c0 + cl;
  const int ntw = (W + TW - 1) / TW;
  const int64_t tile = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  if (c >= C || tile >= int64_t(B) * H * ntw) return;
  const int tw = int(tile % ntw);
  const int64_t bi = tile / ntw;
  const int i = int(bi % H), b = int(bi / H), j0 = tw * TW;

  float acc[TW][8];
  {
    float bias[8] = {};
    if (bf) {
      const float4 b0 = *reinterpret_cast<const float4*>(bf + c);
      const float4 b1 = *reinterpret_cast<const float4*>(bf + c + 4);
      bias[0] = b0.x, bias[1] = b0.y, bias[2] = b0.z, bias[3] = b0.w;
      bias[4] = b1.x, bias[5] = b1.y, bias[6] = b1.z, bias[7] = b1.w;
    }
#pragma unroll
    for (int t = 0; t < TW; ++t)
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[t][e] = bias[e];
  }
#pragma unroll
  for (int kh = 0; kh < K; ++kh) {
    const int ii = i + kh - r;
    if (ii < 0 || ii >= H) continue;
    const __nv_bfloat16* row = x + (int64_t(b) * H + ii) * W * C + c;
    float wv[K][8];  // this kernel row's folded weights of the thread's 8 channels
#pragma unroll
    for (int kw = 0; kw < K; ++kw) {
      const float* ws = wsm + (kh * K + kw) * CB + cl;
      const float4 w0 = *reinterpret_cast<const float4*>(ws);
      const float4 w1 = *reinterpret_cast<const float4*>(ws + 4);
      wv[kw][0] = w0.x, wv[kw][1] = w0.y, wv[kw][2] = w0.z, wv[kw][3] = w0.w;
      wv[kw][4] = w1.x, wv[kw][5] = w1.y, wv[kw][6] = w1.z, wv[kw][7] = w1.w;
    }
#pragma unroll
    for (int m = 0; m < NW; ++m) {
      const int jj = j0 - r + m;
      float px[8] = {};
      if (jj >= 0 && jj < W) ld8(row + int64_t(jj) * C, px);
      // pixel m feeds output t through tap kw = m - t: for each output, taps in ascending order
#pragma unroll
      for (int kw = K - 1; kw >= 0; --kw) {
        const int t = m - kw;
        if (t < 0 || t >= TW) continue;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[t][e] = fmaf(wv[kw][e], px[e], acc[t][e]);
      }
    }
  }
  float f = 0.5f;
  for (int l = 0; l < lv.L; ++l, f *= 0.5f) {
    const int64_t rowbase = (int64_t(b) * lv.hp[l] + (i >> (l + 1))) * lv.wp[l];
    const float fr = ((i >> l) & 1) ? -f : f;
    if (l == 0)
      synth_add_level8<4>(acc, lv.t[l], rowbase, lv.wp[l], C, c, j0, l, fr, f);
    else if (l == 1)
      synth_add_level8<2>(acc, lv.t[l], rowbase, lv.wp[l], C, c, j0, l, fr, f);
    else
      synth_add_level8<1>(acc, lv.t[l], rowbase, lv.wp[l], C, c, j0, l, fr, f);
  }
  __nv_bfloat16* out = y + (int64_t(b) * H + i) * W * C + c;
#pragma unroll
  for (int t = 0; t < TW; ++t)
    if (j0 + t < W) st8(out + int64_t(j0 + t) * C, acc[t]);
}

// ---- Haar analysis of a bf16 input, 8 channels per thread ----------------------------------------
// The same coefficients as haar_kernel (haar4 of the four pixels of a 2x2 block, zero past hi / wi)
// with one 16-byte load per pixel: coef (B, hp, wp, C) float4, ll_next (B, hp, wp, C) float (the LL
// band) when not nullptr. Requires C % 8 == 0 and src, coef, ll_next 16-byte aligned.
__global__ void __launch_bounds__(256)
    haar_v8_kernel(const __nv_bfloat16* __restrict__ src, int B, int hi, int wi, int C, int hp,
                   int wp, float4* __restrict__ coef, float* __restrict__ ll_next) {
  const int cv = C / 8;
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= int64_t(B) * hp * wp * cv) return;
  const int c = int(idx % cv) * 8;
  const int64_t pos = idx / cv;  // (b * hp + p) * wp + q
  const int q = int(pos % wp);
  const int64_t bp = pos / wp;
  const int p = int(bp % hp), b = int(bp / hp), i = 2 * p, j = 2 * q;
  const bool i1 = i + 1 < hi, j1 = j + 1 < wi;
  const __nv_bfloat16* r0 = src + ((int64_t(b) * hi + i) * wi + j) * C + c;
  const __nv_bfloat16* r1 = r0 + int64_t(wi) * C;
  float a[8], bb[8] = {}, cc[8] = {}, d[8] = {};
  ld8(r0, a);
  if (j1) ld8(r0 + C, bb);
  if (i1) ld8(r1, cc);
  if (i1 && j1) ld8(r1 + C, d);
  float4* out = coef + pos * C + c;
  float ll[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const float4 v = haar4(a[e], bb[e], cc[e], d[e]);
    out[e] = v;
    ll[e] = v.x;
  }
  if (ll_next) {
    float4* l4 = reinterpret_cast<float4*>(ll_next + pos * C + c);
    l4[0] = make_float4(ll[0], ll[1], ll[2], ll[3]);
    l4[1] = make_float4(ll[4], ll[5], ll[6], ll[7]);
  }
}

}  // namespace hg::kernels::cuda::wtconv_detail
