// One split level's weight gradient in one launch, both operands' Haar coefficients formed on the
// fly: dL/dw~_l[s C + c][p][q] = sum over images and grid positions (i, j) of
// H(ll_l)_s(i - r + p, j - r + q, c) * H(gR_l)_s(i, j, c) (the level's depthwise weight gradient
// over its coefficient planes, r = K / 2, zeros outside the level grid), from ll_l (x's LL band,
// ll_0 = x) and gR_l (G's, gR_0 = G) at the level's input resolution (bf16, stride 1, K = 3, 5,
// 7). It replaces, on the split path's backward, haar_v4_kernel over ll_l (H(x) written, N
// elements at level 0) and the staged depthwise weight gradient over H(x) and H(G) (which made
// haar_conv_kernel over G write H(G), N more): neither coefficient set is stored now, so the
// level's working memory drops by 2 N at level 0 and the launch writes only x's next LL band.
//
// The coefficients are those the two launches read, bit for bit (haar4 of the same four inputs,
// rounded to T once: haar_tiles); the products and f32 sums are the staged weight gradient's
// (a thread's K x K sums over a row pair: ga * win[p][q] then gb * win[p + 1][q] per column), the
// block's and the slices' sums added in a fixed order (deterministic run to run). Only the order of
// the sums over positions differs from the two launches', as it differs between their grid sizes.
// Compiled as C++17 by nvcc: include only core/tensor.h, core/error.h, kernels/*.h,
// kernels/cuda/*.h.
#pragma once

#include "kernels/cuda/staged_rows.cuh"
#include "kernels/cuda/wtconv_haar_conv.cuh"

namespace hg::kernels::cuda::wtconv_detail {

/// Level row pairs of a haar_wgrad_kernel group (4 level rows: x's ring of K + 3 rows and G's
/// tile, 92 KB at a 28-wide grid, let two blocks share a multiprocessor), and its warps: one per
/// (sub-band, row pair).
constexpr int kHaarWgradPairs = 2, kHaarWgradWarps = 4 * kHaarWgradPairs;

/// Row groups (2 kHaarWgradPairs level rows of one image) of a haar_wgrad_kernel launch.
inline int64_t haar_wgrad_groups(int B, int hp) {
  constexpr int kRows = 2 * kHaarWgradPairs;
  return int64_t(B) * ((hp + kRows - 1) / kRows);
}

/// Shared memory of haar_wgrad_kernel: x's four coefficient rings (the group's rows and the
/// conv's halo) and G's four tiles (the group's rows), or (after the last group) the warps' sums.
template <typename T>
size_t haar_wgrad_smem(int K, int wp) {
  constexpr int kRows = 2 * kHaarWgradPairs;
  const size_t tiles = sizeof(T) * 4 * 32 *
                       (size_t(kRows + K - 1) * size_t(wp + K - 1) + size_t(kRows) * size_t(wp));
  const size_t sums = sizeof(float) * kHaarWgradWarps * K * K * 33;
  return std::max(tiles, sums);
}

/// The (K + 1) x K window of staged_rows.cuh over rows held in a ring (haar_wgrad_kernel): row m
/// of the window starts at rows[m] (this thread's channel, staged column 0); the same loads and
/// shifts as window_start / window_advance.
template <typename T, int K>
__device__ __forceinline__ void ring_window_start(const T* const (&rows)[K + 1],
                                                  float (&win)[K + 1][K]) {
#pragma unroll
  for (int m = 0; m < K + 1; ++m)
#pragma unroll
    for (int q = 1; q < K; ++q) win[m][q] = staged_value(rows[m] + (q - 1) * 32);
}
template <typename T, int K>
__device__ __forceinline__ void ring_window_advance(const T* const (&rows)[K + 1], int j,
                                                    float (&win)[K + 1][K]) {
#pragma unroll
  for (int m = 0; m < K + 1; ++m) {
#pragma unroll
    for (int q = 0; q + 1 < K; ++q) win[m][q] = win[m][q + 1];
    win[m][K - 1] = staged_value(rows[m] + (j + K - 1) * 32);
  }
}

// Block (32, kHaarWgradWarps) = channels [32 blockIdx.y, + 32) x the row groups [groups_per_block
// blockIdx.x, + groups_per_block) (group g: image g / G, level rows [p0, p0 + kRows), p0 = (g % G)
// kRows, kRows = 2 kHaarWgradPairs); blockIdx.x is the slice. Per group: phase 1 forms G's
// coefficient tiles over the group's rows and x's over the rows the window reads, [p0 - r, p0 +
// kRows + r) (zeros outside the grid; haar_tiles). x's tile is a ring of RS = kRows + K - 1 rows
// (level row p in slot (p + r) % RS): a group that follows its image's previous group in the
// block keeps the K - 1 rows they share and forms only its kRows new ones (x's Haar once a row
// instead of RS / kRows times). Then the group's LL band of x goes from the ring to ll_next (when
// given). Phase 2: warp (s, pair) slides the (K + 1) x K window over ring s along its row pair, a
// thread (one channel) adding its K x K products with G's two coefficients at each column. At the
// end the two warps of a sub-band are added (pair 0, then 1) and the block writes its slice
// partial[blockIdx.x][s C + c][p K + q].
template <typename T, int KT>
__global__ void __launch_bounds__(32 * kHaarWgradWarps)
    haar_wgrad_kernel(const T* __restrict__ x, const T* __restrict__ g, HaarConvDims d,
                      int groups_per_block, float* __restrict__ partial, T* __restrict__ ll_next) {
  constexpr int K = KT, KR = KT + 1, KK = KT * KT, r = KT / 2;
  constexpr int VE = 16 / int(sizeof(T)), VPP = 32 / VE;  // elements per vector, vectors a pixel
  constexpr int kRows = 2 * kHaarWgradPairs, RS = kRows + K - 1, kThreads = 32 * kHaarWgradWarps;
  extern __shared__ uint4 stage[];
  const int WS = d.wp + K - 1;  // x's staged columns
  const int xtile = RS * WS * 32, gtile = kRows * d.wp * 32;
  T* xt = reinterpret_cast<T*>(stage);  // [4][RS][WS][32], a ring of rows
  T* gt = xt + 4 * xtile;               // [4][kRows][wp][32]
  const int G = (d.hp + kRows - 1) / kRows;
  const int c0 = blockIdx.y * 32, lane = threadIdx.x, s = threadIdx.y % 4, pair = threadIdx.y / 4;
  const int tid = threadIdx.y * 32 + lane;
  const int64_t image = int64_t(d.hi) * d.wi * d.C;
  // group indices in int32 (the host checks B G < 2^31)
  const int g0 = int(blockIdx.x) * groups_per_block;
  const int g1 = int(std::min<int64_t>(int64_t(d.B) * G, int64_t(g0) + groups_per_block));
  // x's level rows [pa, pa + n) of image b into their ring slots (one wrap at most: n <= RS)
  auto form_x_rows = [&](const T* img, int b, int pa, int n) {
    const int slot = (pa + r) % RS, n1 = min(n, RS - slot);
    haar_tiles<T, kThreads>(img, d, b, pa, n1, -r, WS, c0, xt + slot * WS * 32, xtile, 0, 0,
                            nullptr, nullptr);
    if (n1 < n)
      haar_tiles<T, kThreads>(img, d, b, pa + n1, n - n1, -r, WS, c0, xt, xtile, 0, 0, nullptr,
                              nullptr);
  };
  float acc[K][K];
#pragma unroll
  for (int p = 0; p < K; ++p)
#pragma unroll
    for (int q = 0; q < K; ++q) acc[p][q] = 0.f;
  for (int grp = g0; grp < g1; ++grp) {
    const int b = grp / G, p0 = grp % G * kRows;
    const T* ximg = x + b * image;
    if (grp > g0 && p0 > 0)  // the previous group was this image's rows above: K - 1 rows kept
      form_x_rows(ximg, b, p0 + r, kRows);
    else
      form_x_rows(ximg, b, p0 - r, RS);
    haar_tiles<T, kThreads>(g + b * image, d, b, p0, kRows, 0, d.wp, c0, gt, gtile, 0, 0, nullptr,
                            nullptr);
    __syncthreads();
    if (ll_next != nullptr) {  // the group's LL band of x (sub-band 0), from the ring
      for (int e = tid; e < kRows * d.wp * VPP; e += kThreads) {
        const int v = e % VPP, q = e / VPP % d.wp, p = p0 + e / VPP / d.wp, cc = c0 + v * VE;
        if (p < d.hp && cc < d.C)
          *reinterpret_cast<Vec16<T>*>(ll_next + ((int64_t(b) * d.hp + p) * d.wp + q) * d.C + cc) =
              *reinterpret_cast<const Vec16<T>*>(xt + (((p + r) % RS) * WS + q + r) * 32 + v * VE);
      }
    }
    if (c0 + lane < d.C && p0 + 2 * pair < d.hp) {
      const int ia = p0 + 2 * pair;  // the pair's level rows ia, ia + 1; window rows ia - r + m
      const T* rows[KR];
#pragma unroll
      for (int m = 0; m < KR; ++m) rows[m] = xt + s * xtile + ((ia + m) % RS) * WS * 32 + lane;
      const T* ga_row = gt + s * gtile + 2 * pair * d.wp * 32 + lane;
      const T* gb_row = ga_row + d.wp * 32;  // zeros past hp (staged)
      float win[KR][K];
      ring_window_start<T, K>(rows, win);
#pragma unroll(KT)
      for (int j = 0; j < d.wp; ++j) {
        ring_window_advance<T, K>(rows, j, win);
        const float ga = staged_value(ga_row + j * 32), gb = staged_value(gb_row + j * 32);
#pragma unroll
        for (int p = 0; p < K; ++p)
#pragma unroll
          for (int q = 0; q < K; ++q)
            acc[p][q] = fmaf(gb, win[p + 1][q], fmaf(ga, win[p][q], acc[p][q]));
      }
    }
    __syncthreads();  // every warp is done with the tiles before the next group restages them
  }
  // the block's sums: warp (s, pair) -> red[pair][s][tap][lane], the pairs added in order
  auto red = reinterpret_cast<float(*)[4][KK][33]>(stage);
#pragma unroll
  for (int p = 0; p < K; ++p)
#pragma unroll
    for (int q = 0; q < K; ++q) red[pair][s][p * K + q][lane] = acc[p][q];
  __syncthreads();
  const int present = min(32, d.C - c0);
  float* out = partial + int64_t(blockIdx.x) * 4 * d.C * KK;
  for (int e = tid; e < 4 * present * KK; e += kThreads) {
    const int sb = e / (present * KK), rest = e % (present * KK), cl = rest / KK, k = rest % KK;
    float sum = red[0][sb][k][cl];
#pragma unroll
    for (int pp = 1; pp < kHaarWgradPairs; ++pp) sum += red[pp][sb][k][cl];
    out[(int64_t(sb) * d.C + c0 + cl) * KK + k] = sum;
  }
}

}  // namespace hg::kernels::cuda::wtconv_detail
