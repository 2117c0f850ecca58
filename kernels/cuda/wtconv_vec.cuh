// Vectorised fast paths of the fused WTConv kernels (4 channels per thread, a register tile of
// outputs along W): the Haar analysis and the one-pass synthesis fused with the base conv.
// Activations and the coefficient planes are T = float (16-byte accesses of 4 channels) or
// __nv_bfloat16 (8-byte accesses of 4 channels), weights and registers float. Used when C % 4 == 0
// and the pointers are aligned; the synthesis also needs K a compiled constant (3, 5, 7, 9) and
// stride == 1; wtconv_synthesis.cu and wtconv_split.cu keep the one-channel kernels for every
// other case. Same math as those kernels, fewer instructions: the one-channel versions spent most
// of their issue slots on scalar loads and 64-bit index arithmetic, which the 4-channel vectors
// amortise 4x (docs/fused-wtconv.md). (The 4-channel on-the-fly level conv that used to live here
// is in the kernel lab, dev/wtconv/.)
// Compiled as C++17 by nvcc: include only core/tensor.h, core/error.h, kernels/*.h,
// kernels/cuda/*.h.
//
// Coefficient tensors (the Haar coefficients and the level outputs t_l) are "sub-band planes":
// (B, hp, wp, 4, C) of the activations' storage type, element (b, p, q, s, c) at
// ((b*hp + p)*wp + q)*4C + s*C + c. Seen as an NHWC tensor of 4C channels (channel s*C + c) they
// are what the depthwise kernels take; and 4 consecutive channels of one sub-band are one 16-byte
// (f32) or 8-byte (bf16) access, so the lanes of a warp, which take
// consecutive channel vectors, read and write contiguous memory. (Before, the layout was PyTorch's
// channel 4c + s, one float4 per channel: 8-channel threads then touched 128 bytes each and a
// warp's access spanned 4 KB: the bf16 synthesis was 1.6x slower than the fp32 one on the H200.)
//
// Thread mapping, after kernels/cuda/depthwise_conv.cu: block (cvb, ty); lane x takes
// channel vector cv = blockIdx.y * cvb + threadIdx.x (channels 4cv .. 4cv+3, one 16-byte load per
// pixel, consecutive lanes on consecutive memory), threadIdx.y + blockIdx.x * ty picks the tile =
// (b, row, column block) of TW consecutive outputs.
#pragma once

#include "kernels/cuda/wtconv_common.cuh"

namespace hg::kernels::cuda::wtconv_detail {

// ---- 4-channel storage I/O: one 16-byte (float) or 8-byte (bf16) access, float in registers -----
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

/// Level outputs for the one-pass synthesis (a kernel argument):
/// t[l] is t_l, (B, hp[l], wp[l], 4, C) of storage type P (the activations' type).
template <typename P>
struct Levels {
  const P* t[kMaxLevels];
  int hp[kMaxLevels], wp[kMaxLevels];
  int L;
};

/// The split path's level tail: levels s .. L-1 run by the whole-plane kernels over ll_s
/// (wtconv_plane.cuh, PlaneOut), which leave their part of R on grid s:
///   r(b, p', q', c) = 2^-s rec_s(p', q'),
/// so that R(p, q) (wtconv_staged.cuh) gets r(p >> (s-1), q >> (s-1)) (rec_1 = sum_{l=1}^{s-1} 2^-l
/// unhaar(t_l) + 2^-(s-1) rec_s, both upsampled to grid 1, and R = rec_1 / 2). f32 (B, h, w, C),
/// 16-byte aligned; r == nullptr: no tail.
struct LevelTail {
  const float* r;
  int s, h, w;
};

// ---- (b) base conv + one-pass synthesis, 4 channels x TW outputs per thread (stride 1)
// ----------- y(b, i, j, c..) = bf + sum_k wb[k] x(i+kh-r, j+kw-r)
//                 + sum_l 2^-(l+1) unhaar(t_l(i>>(l+1), j>>(l+1)); bits l of i, j)
//                 [+ tail.r(b, i >> s, j >> s), a level tail's term].
// The folded base filters of the block's channels are staged in shared memory as [tap][channel]
// (a warp reads one tap as one contiguous row). Tiles start at multiples of TW = 8, so level l's
// ancestors of the tile are the 8 >> (l+1) (at least 1) consecutive positions from j0 >> (l+1):
// each is loaded once per thread and expanded to the pixels below it.
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

/// 4 channels (c .. c+3) of the 4 sub-bands at one position of a sub-band-plane tensor:
/// v[s] = t[pos * 4C + s * C + c ..], one 16-byte (f32) or 8-byte (bf16) load each.
template <typename P>
__device__ __forceinline__ void load_bands4(const P* t, int64_t pos, int C, int c, float4 (&v)[4]) {
  const P* p = t + pos * 4 * C + c;
#pragma unroll
  for (int s = 0; s < 4; ++s) v[s] = ld4(p + int64_t(s) * C);
}

/// Adds level l's contribution to the TW = 8 accumulators: NA ancestors of 8 / NA pixels each.
/// tl is t_l (B, hp, wp, 4, C); rowbase = (b * hp + (i >> (l+1))) * wp.
template <int NA, typename P>
__device__ __forceinline__ void synth_add_level(float4 (&acc)[kSynthTW], const P* tl,
                                                int64_t rowbase, int wp, int C, int c, int j0,
                                                int l, float fr, float f) {
  constexpr int PER = kSynthTW / NA;
  const int qa0 = j0 >> (l + 1);
#pragma unroll
  for (int a = 0; a < NA; ++a) {
    const int q = qa0 + a;
    if (q >= wp) break;  // only pixels past W would read it
    float4 tb[4];        // sub-bands 0..3 of channels c .. c+3
    load_bands4(tl, rowbase + q, C, c, tb);
    float4 u0, u1;
    unhaar_pair(make_float4(tb[0].x, tb[1].x, tb[2].x, tb[3].x), f, fr, u0.x, u1.x);
    unhaar_pair(make_float4(tb[0].y, tb[1].y, tb[2].y, tb[3].y), f, fr, u0.y, u1.y);
    unhaar_pair(make_float4(tb[0].z, tb[1].z, tb[2].z, tb[3].z), f, fr, u0.z, u1.z);
    unhaar_pair(make_float4(tb[0].w, tb[1].w, tb[2].w, tb[3].w), f, fr, u0.w, u1.w);
#pragma unroll
    for (int k = 0; k < PER; ++k) {
      const int t = a * PER + k;
      add4(acc[t], (((j0 + t) >> l) & 1) ? u1 : u0);
    }
  }
}

template <int KT, typename T>
__global__ void __launch_bounds__(256, 3)
    synth_v4_kernel(const T* __restrict__ x, int B, int H, int W, int C,
                    const float* __restrict__ wb, const float* __restrict__ bf, Levels<T> lv,
                    LevelTail tail, T* __restrict__ y) {
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
  if (tail.r != nullptr) {  // its positions repeat along the tile: the repeats hit L1
    const float* tr = tail.r + (int64_t(b) * tail.h + (i >> tail.s)) * tail.w * C + c;
#pragma unroll
    for (int t = 0; t < TW; ++t)
      if (j0 + t < W) {
        add4(acc[t], *reinterpret_cast<const float4*>(tr + int64_t((j0 + t) >> tail.s) * C));
      }
  }
  T* out = y + (int64_t(b) * H + i) * W * C + c;
#pragma unroll
  for (int t = 0; t < TW; ++t)
    if (j0 + t < W) st4(out + int64_t(j0 + t) * C, acc[t]);
}

// ---- Haar analysis, 4 channels per thread -------------------------------------------------------
// The coefficients of src (B, hi, wi, C) on the grid (hp, wp) = (ceil(hi/2), ceil(wi/2)) (haar4
// of the four pixels of a 2x2 block in f32, zero past hi / wi, rounded once to S on store): coef
// (B, hp, wp, 4, C) when not nullptr, and the (same rounded) LL band again as ll_next
// (B, hp, wp, C) when not nullptr (the next level's input). S = float or __nv_bfloat16 for src
// and both outputs. One thread: one position, 4 channels (one 16- or 8-byte access per pixel and
// per sub-band). Requires C % 4 == 0 and every pointer aligned to 4 elements of S.
template <typename S>
__global__ void __launch_bounds__(256)
    haar_v4_kernel(const S* __restrict__ src, int B, int hi, int wi, int C, int hp, int wp,
                   S* __restrict__ coef, S* __restrict__ ll_next) {
  const int cv = C / 4;
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= int64_t(B) * hp * wp * cv) return;
  const int c = int(idx % cv) * 4;
  const int64_t pos = idx / cv;  // (b * hp + p) * wp + q
  const int q = int(pos % wp);
  const int64_t bp = pos / wp;
  const int p = int(bp % hp), b = int(bp / hp), i = 2 * p, j = 2 * q;
  const bool i1 = i + 1 < hi, j1 = j + 1 < wi;
  const S* r0 = src + ((int64_t(b) * hi + i) * wi + j) * C + c;
  const S* r1 = r0 + int64_t(wi) * C;
  const float4 a = ld4(r0), bb = j1 ? ld4(r0 + C) : f4(0.f);
  const float4 cc = i1 ? ld4(r1) : f4(0.f), d = (i1 && j1) ? ld4(r1 + C) : f4(0.f);
  const float4 hx = haar4(a.x, bb.x, cc.x, d.x), hy = haar4(a.y, bb.y, cc.y, d.y);
  const float4 hz = haar4(a.z, bb.z, cc.z, d.z), hw = haar4(a.w, bb.w, cc.w, d.w);
  if (coef) {
    S* o = coef + pos * 4 * C + c;
    st4(o, make_float4(hx.x, hy.x, hz.x, hw.x));
    st4(o + C, make_float4(hx.y, hy.y, hz.y, hw.y));
    st4(o + 2 * int64_t(C), make_float4(hx.z, hy.z, hz.z, hw.z));
    st4(o + 3 * int64_t(C), make_float4(hx.w, hy.w, hz.w, hw.w));
  }
  if (ll_next) st4(ll_next + pos * C + c, make_float4(hx.x, hy.x, hz.x, hw.x));
}

}  // namespace hg::kernels::cuda::wtconv_detail
