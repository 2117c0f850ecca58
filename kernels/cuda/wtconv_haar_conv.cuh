// One level of the split path in one launch: the Haar analysis of a level's input and the level's
// depthwise conv over the coefficients, with the coefficients built straight into shared memory
// (bf16 and f32, stride 1, K = 3, 5, 7). It replaces haar_v4_kernel + the staged depthwise forward
// (depthwise_conv.cu) on the split path: the forward's level convs t_l = conv(H(ll_l), w~_l), and
// the backward's level gradients gt_l = conv(H(gR_l), rot180(w~_l)) (the transposed conv as a
// forward conv, as bf16 runs it; section 8 of docs/fused-wtconv.md). What it saves: the
// coefficient planes' write and read-back between the two launches (the forward never stores
// them; the backward writes them once only where haar_wgrad_kernel does not take the level's
// weight gradient), and a launch.
//
// Same values bit for bit as the two launches it replaces: each coefficient is haar4 of the same
// four inputs, rounded to T once (as haar_v4_kernel stores it), and each output one fused
// multiply-add per tap in row-major filter order from 0, the filter rounded to T, the sum rounded
// once (as every variant of depthwise_conv_forward does). So the CPU reference and its tolerances
// are unchanged.
// Compiled as C++17 by nvcc: include only core/tensor.h, core/error.h, kernels/*.h,
// kernels/cuda/*.h.
#pragma once

#include "kernels/cuda/staged_rows.cuh"
#include "kernels/cuda/wtconv_vec.cuh"

namespace hg::kernels::cuda::wtconv_detail {

/// Level row pairs of a haar_conv_kernel block, and its warps: kHaarConvWarps / 4 per sub-band,
/// each taking every (kHaarConvWarps / 4)-th pair. Eight rows a block: the halo's Haar (K - 1
/// staged rows) is computed again by the next block, 1.5x the rows at K = 5 (2x with 4 rows).
/// Where only one block's tiles fit a multiprocessor (f32 at a 28-wide grid: 196 KB), the block
/// has kHaarConvWideWarps warps instead, one a (sub-band, row pair), so that a multiprocessor still
/// has 16 warps resident (haar_conv_warps).
constexpr int kHaarConvPairs = 4, kHaarConvWarps = 8, kHaarConvWideWarps = 4 * kHaarConvPairs;

/// Sizes of a haar_conv_kernel launch: the source (B, hi, wi, C) and the level grid (hp, wp) =
/// (ceil(hi / 2), ceil(wi / 2)) (int32: the host checks).
struct HaarConvDims {
  int B, hi, wi, C, hp, wp;
};

/// The Haar kernels' staging (haar_conv_kernel, haar_wgrad_kernel): forms the coefficients of
/// level rows [pa, pa + nrows) x level columns [qa, qa + ncols) of one image `img` (hi, wi, C) into
/// four staged tiles tiles[s * tile + (m * ncols + n) * 32 + channel] (sub-band s, staged row m,
/// column n, channels [c0, c0 + 32)), rounded to T; zeros outside the level grid (hp, wp) (a
/// conv's padding) and past C, a source pixel past hi or wi counting as zero (the analysis
/// padding). Items (m, n, channel vector) from 16-byte loads, 8 (bf16) channels a thread, kBatch a
/// thread at once; a thread keeps its channel vector and steps (m, n) (StageWalk: no division per
/// item). The grid rows [own0, own1) among them also go to coef (sub-band planes (B, hp, wp, 4, C),
/// image b) and their LL band to ll_next ((B, hp, wp, C)), each when given. Every thread of the
/// kThreads-thread block takes part; the caller synchronises before reading the tiles.
template <typename T, int kThreads>
__device__ __forceinline__ void haar_tiles(const T* __restrict__ img, const HaarConvDims& d, int b,
                                           int pa, int nrows, int qa, int ncols, int c0,
                                           T* __restrict__ tiles, int tile, int own0, int own1,
                                           T* __restrict__ coef, T* __restrict__ ll_next) {
  constexpr int VE = 16 / int(sizeof(T)), VPP = 32 / VE;  // elements per vector, vectors a pixel
  constexpr int kBatch = 2;
  const int64_t C4 = int64_t(4) * d.C;
  const int n_items = nrows * ncols * VPP, tid = threadIdx.y * 32 + threadIdx.x;
  const int v = tid % VPP, cc = c0 + v * VE;
  StageWalk<VPP, kThreads> at(tid, ncols);
  for (int e0 = tid; e0 < n_items; e0 += kBatch * kThreads) {
    uint4 px[kBatch][4];  // the 2 x 2 source pixels (a, b; c, d) of each item
    int mm[kBatch], nn[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e = e0 + u * kThreads;
      mm[u] = at.m;
      nn[u] = at.n;
      at.next(ncols);
      const int p = pa + mm[u], q = qa + nn[u];
#pragma unroll
      for (int k = 0; k < 4; ++k) px[u][k] = make_uint4(0, 0, 0, 0);
      if (e < n_items && p >= 0 && p < d.hp && q >= 0 && q < d.wp && cc < d.C) {
        const int i = 2 * p, j = 2 * q;
        const T* a = img + (int64_t(i) * d.wi + j) * d.C + cc;
        const bool i1 = i + 1 < d.hi, j1 = j + 1 < d.wi;
        px[u][0] = __ldg(reinterpret_cast<const uint4*>(a));
        if (j1) px[u][1] = __ldg(reinterpret_cast<const uint4*>(a + d.C));
        if (i1) px[u][2] = __ldg(reinterpret_cast<const uint4*>(a + int64_t(d.wi) * d.C));
        if (i1 && j1) px[u][3] = __ldg(reinterpret_cast<const uint4*>(a + int64_t(d.wi + 1) * d.C));
      }
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e = e0 + u * kThreads;
      if (e >= n_items) break;
      const int m = mm[u], n = nn[u];
      Vec16<T> in[4], out[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) in[k] = *reinterpret_cast<const Vec16<T>*>(&px[u][k]);
#pragma unroll
      for (int h = 0; h < VE; ++h) {
        const float4 hv =
            haar4(to_f32(in[0].v[h]), to_f32(in[1].v[h]), to_f32(in[2].v[h]), to_f32(in[3].v[h]));
        out[0].v[h] = from_f32<T>(hv.x);
        out[1].v[h] = from_f32<T>(hv.y);
        out[2].v[h] = from_f32<T>(hv.z);
        out[3].v[h] = from_f32<T>(hv.w);
      }
      const int off = (m * ncols + n) * 32 + v * VE;
#pragma unroll
      for (int s = 0; s < 4; ++s) *reinterpret_cast<Vec16<T>*>(tiles + s * tile + off) = out[s];
      // the grid's own rows and columns: the coefficient planes and the LL band
      const int p = pa + m, q = qa + n;
      if (p >= own0 && p < own1 && p < d.hp && q >= 0 && q < d.wp && cc < d.C) {
        const int64_t pos = (int64_t(b) * d.hp + p) * d.wp + q;
        if (coef != nullptr) {
#pragma unroll
          for (int s = 0; s < 4; ++s)
            *reinterpret_cast<Vec16<T>*>(coef + pos * C4 + s * d.C + cc) = out[s];
        }
        if (ll_next != nullptr) *reinterpret_cast<Vec16<T>*>(ll_next + pos * d.C + cc) = out[0];
      }
    }
  }
}

// Block (32, kHaarConvWarps) = level rows [p0, p0 + 2 kHaarConvPairs) of one image (blockIdx.x =
// b * groups + group) x source channels [32 blockIdx.y, + 32), all four sub-bands. Phase 1: the
// block forms the coefficients of level rows [p0 - r, p0 + 2 pairs + r) x columns [-r, wp + r)
// (zeros outside the level grid: the conv's padding; a source pixel past hi or wi counts as zero:
// the analysis padding) from 16-byte loads of the source, 8 (bf16) channels a thread, and stores
// them rounded to T as four staged tiles [sub-band][row][column][32 channels]; the block's own
// rows also go to coef (sub-band planes, when given) and their LL band to ll_next (when given).
// Phase 2: warp (s, pairs) runs the staged depthwise forward over tile s: a thread (one channel)
// keeps the K x K filter of channel s C + c (wl is (4C, K*K), rounded to T here) in registers and
// slides the (K + 1) x K window of staged_rows.cuh along the row pair, writing t as sub-band planes
// (B, hp, wp, 4, C).
template <typename T, int KT, int kWarps = kHaarConvWarps>
__global__ void __launch_bounds__(32 * kWarps)
    haar_conv_kernel(const T* __restrict__ src, HaarConvDims d, const float* __restrict__ wl,
                     T* __restrict__ t, T* __restrict__ coef, T* __restrict__ ll_next) {
  static_assert(kWarps % 4 == 0 && kWarps / 4 <= kHaarConvPairs, "warps: whole sub-band groups");
  constexpr int K = KT, KR = KT + 1, KK = KT * KT, r = KT / 2;
  constexpr int kRows = 2 * kHaarConvPairs, kThreads = 32 * kWarps;
  extern __shared__ uint4 stage[];
  const int RS = kRows + K - 1, WS = d.wp + K - 1;  // staged rows and columns of one tile
  const int tile = RS * WS * 32;                    // elements of one sub-band's tile
  T* tiles = reinterpret_cast<T*>(stage);           // [4][RS][WS][32]
  const int G = (d.hp + kRows - 1) / kRows;
  const int b = int(blockIdx.x / G), p0 = int(blockIdx.x % G) * kRows, c0 = blockIdx.y * 32;
  const int64_t C4 = int64_t(4) * d.C;
  const T* img = src + int64_t(b) * d.hi * d.wi * d.C;

  // Phase 1: the coefficient tiles of the block's rows and the conv's halo
  haar_tiles<T, kThreads>(img, d, b, p0 - r, RS, -r, WS, c0, tiles, tile, p0, p0 + kRows, coef,
                          ll_next);

  // Phase 2: warp (sub-band s, w) convolves tile s, row pairs w, w + kWarps / 4, ...
  constexpr int kBandWarps = kWarps / 4;
  const int lane = threadIdx.x, s = threadIdx.y % 4, c = c0 + lane;
  float wr[K][K];
#pragma unroll
  for (int pp = 0; pp < K; ++pp)
#pragma unroll
    for (int qq = 0; qq < K; ++qq)
      wr[pp][qq] =
          c < d.C ? to_f32(from_f32<T>(wl[(int64_t(s) * d.C + c) * KK + pp * K + qq])) : 0.f;
  __syncthreads();
  if (c >= d.C) return;
  for (int pair = threadIdx.y / 4; pair < kHaarConvPairs; pair += kBandWarps) {
    const int ia = p0 + 2 * pair;  // this pair's level rows: ia and ia + 1
    if (ia >= d.hp) return;
    const bool second = ia + 1 < d.hp;
    const T* xr = tiles + s * tile + 2 * pair * WS * 32 + lane;  // tile row m: xr + m * WS * 32
    T* ta = t + (int64_t(b) * d.hp + ia) * d.wp * C4 + int64_t(s) * d.C + c;
    T* tb = ta + int64_t(d.wp) * C4;
    float win[KR][K];
    window_start<T, K>(xr, WS, 0, win);
#pragma unroll(KT)
    for (int j = 0; j < d.wp; ++j, ta += C4, tb += C4) {
      window_advance<T, K>(xr, WS, j, win);
      float a0 = 0.f, a1 = 0.f;
      pair_taps<K>(wr, win, a0, a1);
      *ta = from_f32<T>(a0);
      if (second) *tb = from_f32<T>(a1);
    }
  }
}

/// Row groups of a haar_conv_kernel launch (its grid's x): B images of hp level rows, 2
/// kHaarConvPairs rows a block.
inline int64_t haar_conv_groups(int B, int hp) {
  return int64_t(B) * ((hp + 2 * kHaarConvPairs - 1) / (2 * kHaarConvPairs));
}

/// Shared memory of haar_conv_kernel: four staged coefficient tiles.
template <typename T>
size_t haar_conv_smem(int K, int wp) {
  return sizeof(T) * 4 * 32 * size_t(2 * kHaarConvPairs + K - 1) * size_t(wp + K - 1);
}

}  // namespace hg::kernels::cuda::wtconv_detail
