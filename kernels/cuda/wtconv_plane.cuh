// The whole-plane fused WTConv2d (stride 1, small maps): one block holds all H x W pixels of one
// image for 32 channels (one per lane) in shared memory and runs the whole layer there, so a
// forward is one launch (plus the weight folds) and a backward one launch plus one deterministic
// reduction, instead of the split path's ~4 + 2L and ~8 + 5L launches, whose fixed cost dominates
// at the 14 x 14 and 7 x 7 maps of WTConvNeXt's stages 3 and 4 (docs/fused-wtconv.md, section 10).
// The same kernels run the split path's level tail (kBase = false: levels s .. L-1 over ll_s, no
// base conv, the output the tail's term of the synthesis; section 11).
//
// Per block and image (image b, channels c0 .. c0 + 31; a forward block may take several images
// in turn, plane_forward in wtconv_plane_host.cu), all in shared memory:
//   1. load the plane x (and, backward, G = dL/dy): as f32 in the forward, in the storage type T
//      in the backward (two planes and two pyramids must fit; bf16 values are exact either way);
//   2. the Haar pyramid: c_l = H(ll_l) as 4 sub-band planes on grid l + 1, ll_{l+1} = its LL plane
//      (rounded to T on store: the bf16 op's rounding points, kernels/wtconv.h);
//   3. (backward) every weight-gradient sum of this image: base taps sum_ij G(i,j) x(i+kh-r,
//      j+kw-r), sum_ij G, and per level and sub-band sum_pq gc(p,q) c(p+kh-r, q+kw-r);
//   4. the synthesis cascade, coarse to fine: t_l = conv(c_l, w~_l) (one fused multiply-add per tap
//      in the filter's row-major order, rounded to T as the split path's level conv stores it),
//      its LL plus rec_{l+1}, rec_l = the inverse Haar of that (f32, 1/2 per level); the level-0
//      step writes y = bias + conv(x, w~_base) + rec_0 directly (backward: grad_x from G with every
//      filter flipped, no bias). By linearity this equals the split path's one-pass synthesis; only
//      f32 summation order differs.
// Shared memory holds x (and G) and their pyramids (f32 forward, T backward), then, in f32, the two
// reconstruction buffers and the block's folded filters (staged once, so a tap's weight is one
// shared load at a fixed offset); the host picks this path only when that fits (plane_fwd_layout,
// plane_bwd_layout). Compiled as C++17 by nvcc (see wtconv_common.cuh).
#pragma once

#include "kernels/cuda/staged_rows.cuh"
#include "kernels/cuda/wtconv_common.cuh"

namespace hg::kernels::cuda::wtconv_detail {

constexpr int kPlaneWarps = 8;  // warps per block; lane = channel
// level-grid columns per thread in the cascade (register window; 4 measured 10% faster than 2
// in the 14 x 14 forward, fifteenth session)
constexpr int kPlaneTQ = 4;

/// The grids of one plane and the sizes and offsets of its shared-memory buffers, in "entries" of
/// 32 values (one per lane); where each lies: plane_fwd_layout, plane_bwd_layout.
struct PlaneGeom {
  int L, K;
  int base;  // 1: a whole layer (plane 0 is the base conv's); 0: a level tail (see below)
  int h[kMaxLevels + 1], w[kMaxLevels + 1];  // grid l: h[l] x w[l]; h[0] = H (WTConvLevels)
  int pyr[kMaxLevels];  // entry offset of c_l (4 planes of h[l+1] * w[l+1]) in a pyramid
  int pyr_size;         // entries of one pyramid
  int rec[2];           // f32 entry offsets of the rec buffers: rec_l (l >= 1) in rec[rec_slot(l)]
  int n_f;              // f32 entries of the rec buffers
  int n_w;  // f32 entries of the staged filters: L * K*K * 4 level taps, then (base) K*K base taps
};

/// Where the cascade's level-0 step goes. A whole layer (g.base = 1): y = [bias] + base conv +
/// rec_0, rounded to T, (B, H, W, C). A level tail (g.base = 0: levels s .. L-1 of the split path,
/// the plane being ll_s on grid s; no base conv): rec = scale * rec_0 of the tail, f32 (B, H, W,
/// C), scale = 2^-s, so that it is the tail's term of R (wtconv_staged.cuh) on grid s. The kernels
/// take its members as separate __restrict__ parameters: as members of a struct parameter they
/// are not restrict, and the compiler then reloads shared memory after every store to them (5%
/// more instructions in the 14 x 14 forward, ~10 us slower on the H200, sixteenth session).
template <typename T>
struct PlaneOut {
  T* y;
  float* rec;
  float scale;
};

/// The rec buffer of level l >= 1: rec_1, rec_3, ... in rec[0] (sized for rec_1 on grid 1), rec_2,
/// rec_4, ... in rec[1] (sized for rec_2 on grid 2), so that level l reads rec_{l+1} from the slot
/// it does not write.
__host__ __device__ inline int rec_slot(int l) { return (l + 1) % 2; }

/// The geometry of an H x W plane with L levels; base: a whole layer (else a level tail, without
/// the base conv's filter).
inline PlaneGeom plane_geom(int H, int W, int L, int K, bool base) {
  PlaneGeom g{};
  g.L = L;
  g.K = K;
  g.base = base ? 1 : 0;
  g.h[0] = H;
  g.w[0] = W;
  int off = 0;
  for (int l = 0; l < L; ++l) {
    g.h[l + 1] = int(wtconv_level_size(g.h[l]));
    g.w[l + 1] = int(wtconv_level_size(g.w[l]));
    g.pyr[l] = off;
    off += 4 * g.h[l + 1] * g.w[l + 1];
  }
  g.pyr_size = off;
  g.rec[0] = 0;  // rec_1, rec_3, ...: the largest is rec_1 on grid 1
  g.rec[1] = L >= 2 ? g.h[1] * g.w[1] : 0;
  g.n_f = g.rec[1] + (L >= 3 ? g.h[2] * g.w[2] : 0);
  if (L < 2) g.n_f = 0;
  g.n_w = (4 * L + g.base) * K * K;
  return g;
}

// A shared-memory plane seen by one lane: its value at (i, j) of an h x w grid, zero outside.
template <typename S>
struct SPlane {
  S* base;  // the lane's first value: smem + lane
  int h, w;
  __device__ __forceinline__ float at(int i, int j) const {
    return (i >= 0 && i < h && j >= 0 && j < w) ? to_f32(base[(i * w + j) * 32]) : 0.f;
  }
  __device__ __forceinline__ S& ref(int i, int j) const { return base[(i * w + j) * 32]; }
};

// An image's plane read from global memory (B, H, W, C) by one lane (channel c), zero outside and
// for lanes past C (active false): the backward's x where its level-0 plane is not staged
// (plane_bwd_layout's x_global).
template <typename T>
struct GPlane {
  const T* base;  // the lane's value at (0, 0) of its image: x + b H W C + c
  int h, w, ld;   // grid, and ld = C elements between pixels
  bool active;
  __device__ __forceinline__ float at(int i, int j) const {
    return (active && i >= 0 && i < h && j >= 0 && j < w) ? to_f32(__ldg(base + (i * w + j) * ld))
                                                          : 0.f;
  }
};

/// v rounded to the storage type T (the bf16 op's rounding point), kept as S.
template <typename T, typename S>
__device__ __forceinline__ S round_as(float v) {
  return from_f32<S>(to_f32(from_f32<T>(v)));
}

/// plane_load's fast path (and plane_stage_filters', an (n, C) filter matrix with b = 0): the block
/// copies image b's plane (n pixels, channels [c0, c0 + 32)) into
/// dst [pixel][32] in 16-byte pieces with cp.async, all of them in flight at once (C a multiple of
/// VE elements, src 16-byte aligned). Not inlined: inlined, the address arithmetic it hoisted out
/// of the backward's image loop made the backward spill (80 registers a thread at most).
template <typename T>
__device__ __noinline__ void plane_copy_async(const T* __restrict__ src, int b, int n, int C,
                                              int c0, T* dst) {
  constexpr int VE = 16 / int(sizeof(T)), VPP = 32 / VE;  // elements a copy, copies a pixel
  const T* img = src + int64_t(b) * n * C + c0;
  for (int e = int(threadIdx.x); e < n * VPP; e += 32 * kPlaneWarps) {
    const int pix = e / VPP, v = e % VPP;
    const bool ok = c0 + v * VE < C;  // whole vectors: C % VE == 0
    copy16_async(dst + pix * 32 + v * VE, img + (ok ? int64_t(pix) * C + v * VE : 0), ok);
  }
  async_commit();
}

/// Loads the lane's channel of image b's plane (B, H, W, C) into smem as S (zeros for lanes past
/// C); the values land at the caller's async_wait<0>() (each thread's own copies), before its
/// barrier. Where S is T, C a multiple of a 16-byte vector and src 16-byte aligned, the block
/// copies the plane with cp.async (plane_copy_async); one load per pixel and lane kept about 25
/// dependent memory latencies per warp in flight one after another at 14 x 14 (the blocks of a
/// multiprocessor start together, so little else ran meanwhile). Otherwise each warp loads and
/// converts pixels in turn.
template <typename T, typename S>
__device__ void plane_load(const T* __restrict__ src, int b, int H, int W, int C, int c, S* dst,
                           int warp) {
  const int n = H * W;
  if constexpr (std::is_same_v<T, S>) {
    if (C % (16 / int(sizeof(T))) == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0) {
      const int lane = int(threadIdx.x) & 31;
      plane_copy_async(src, b, n, C, c - lane, dst - lane);
      return;
    }
  }
  const T* p = src + int64_t(b) * n * C + c;
  const bool active = c < C;
#pragma unroll 4
  for (int pix = warp; pix < n; pix += kPlaneWarps)
    dst[pix * 32] = from_f32<S>(active ? to_f32(p[int64_t(pix) * C]) : 0.f);
}

/// Stages the block's folded filters in shared memory, 32 lanes an entry: the level taps as W at
/// wl_sm, entry e = (l * K*K + k) * 4 + s (wl (L, K*K, 4, C) of storage G: T, bf16-rounded for
/// bf16; W = bf16 only where G is, so staging is exact), the base taps as f32 at wb_sm, entry k
/// (wb (K*K, C), none for a level tail); zeros for lanes past C. wl_sm, wb_sm: this lane's first
/// entry. Taps stored as they are staged (W = G) are copied with cp.async, all 16-byte pieces in
/// flight at once (plane_copy_async; C a multiple of a vector, 16-byte aligned): a load and a
/// conversion per entry and lane, eight in flight, was ~11% of the 14 x 14 forward's stall samples
/// (Nsight, twenty-first session; forward 62.2 -> 54.7 us, the backward unchanged at 112.4 us).
/// Synchronises the block, once this thread's cp.async copies (plane_load's too) have landed.
template <typename W, typename G>
__device__ void plane_stage_filters(const PlaneGeom& g, const G* __restrict__ wl,
                                    const float* __restrict__ wb, int C, int c, int warp, W* wl_sm,
                                    float* wb_sm) {
  const int nl = g.L * g.K * g.K * 4, nb = g.n_w - nl, lane = int(threadIdx.x) & 31;
  const auto copies = [&](const auto* src, int vec) {
    return C % vec == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0;
  };
  bool levels_done = false, base_done = nb == 0;
  if constexpr (std::is_same_v<W, G>) {
    if (copies(wl, 16 / int(sizeof(G)))) {
      plane_copy_async(wl, 0, nl, C, c - lane, wl_sm - lane);
      levels_done = true;
    }
  }
  if (!base_done && copies(wb, 4)) {
    plane_copy_async(wb, 0, nb, C, c - lane, wb_sm - lane);
    base_done = true;
  }
  // otherwise a load per entry and lane, unrolled so that several are in flight at once
  const int cs = c < C ? c : 0;
  const float keep = c < C ? 1.f : 0.f;
  if (!levels_done) {
#pragma unroll 8
    for (int e = warp; e < nl; e += kPlaneWarps)
      wl_sm[e * 32] = from_f32<W>(keep * to_f32(__ldg(wl + int64_t(e) * C + cs)));
  }
  if (!base_done) {
#pragma unroll 8
    for (int e = warp; e < nb; e += kPlaneWarps)
      wb_sm[e * 32] = keep * __ldg(wb + int64_t(e) * C + cs);
  }
  async_wait<0>();  // and the plane copies the caller started (plane_load)
  __syncthreads();
}

/// The backward's shared memory, in bytes from its start. Region A (offset 0): G and its pyramid
/// (T), for the whole image. Region B (b_off): x and its pyramid (T) while the weight-gradient
/// sums run; then, while the cascade runs, the staged filters (level taps as T at b_off, base
/// taps f32 at wb_off) and the rec buffers (f32 at rec_off). Sharing region B lets three blocks
/// of the 14 x 14 backward fit a multiprocessor instead of two (bf16: 61 instead of 110 KB).
/// With x_global, region B holds only x's pyramid during the sums: x's level-0 plane is read from
/// global memory (GPlane) by the pyramid's first level and the base plane's sums. That is what
/// lets two f32 blocks fit a multiprocessor at 14 x 14 (108 instead of 121 KB; thirtieth session).
struct PlaneBwdLayout {
  size_t b_off, wb_off, rec_off, bytes;
};

__host__ __device__ inline size_t align16(size_t n) { return (n + 15) / 16 * 16; }

/// The forward's shared memory, in bytes from its start: x and its pyramid stored as S (T, or f32
/// for a bf16 T: exact either way, x being bf16 and the pyramid rounded to bf16 where it is
/// formed), the rec buffers (f32, rec_off), the base taps (f32, wb_off), the level taps (S, wl_off:
/// bf16-rounded already for a bf16 T). bf16 at 14 x 14: 61 KB a block with S = bf16, three a
/// multiprocessor (with f32: 110 KB, two).
struct PlaneFwdLayout {
  size_t rec_off, wb_off, wl_off, bytes;
};

template <typename S>
__host__ __device__ inline PlaneFwdLayout plane_fwd_layout(const PlaneGeom& g) {
  const size_t entry = 32 * sizeof(S), nl = size_t(g.L) * g.K * g.K * 4;
  PlaneFwdLayout lay;
  lay.rec_off = align16(size_t(g.h[0] * g.w[0] + g.pyr_size) * entry);
  lay.wb_off = lay.rec_off + size_t(g.n_f) * 32 * sizeof(float);
  lay.wl_off = lay.wb_off + (size_t(g.n_w) - nl) * 32 * sizeof(float);
  lay.bytes = lay.wl_off + nl * entry;
  return lay;
}

template <typename T>
__host__ __device__ inline PlaneBwdLayout plane_bwd_layout(const PlaneGeom& g, bool x_global) {
  const size_t entry = 32 * sizeof(T), plane = size_t(g.h[0] * g.w[0] + g.pyr_size) * entry;
  const size_t x_part = x_global ? size_t(g.pyr_size) * entry : plane;  // region B in the sums
  const size_t nl = size_t(g.L) * g.K * g.K * 4, nb = size_t(g.n_w) - nl;
  PlaneBwdLayout lay;
  lay.b_off = align16(plane);
  lay.wb_off = lay.b_off + align16(nl * entry);
  lay.rec_off = lay.wb_off + nb * 32 * sizeof(float);
  const size_t cascade = lay.rec_off + size_t(g.n_f) * 32 * sizeof(float);
  lay.bytes = cascade > lay.b_off + x_part ? cascade : lay.b_off + x_part;
  return lay;
}

/// One position of a pyramid level: the Haar coefficients of the level's input `in` (an SPlane, or
/// a GPlane) at position pos of its level grid (wp columns, n positions) into the four sub-band
/// planes at out, each computed as haar4 adds and rounded to T once.
template <typename T, typename S, typename P>
__device__ __forceinline__ void pyramid_at(const P& in, S* out, int n, int wp, int pos) {
  const int p = pos / wp, q = pos % wp, i = 2 * p, j = 2 * q;
  const float4 v = haar4(in.at(i, j), in.at(i, j + 1), in.at(i + 1, j), in.at(i + 1, j + 1));
  out[pos * 32] = round_as<T, S>(v.x);
  out[(n + pos) * 32] = round_as<T, S>(v.y);
  out[(2 * n + pos) * 32] = round_as<T, S>(v.z);
  out[(3 * n + pos) * 32] = round_as<T, S>(v.w);
}

/// The Haar pyramid of the plane at `src` (grid 0) into `pyr` (levels 0 .. L-1); with src2, the
/// pyramid of a second plane on the same grids into pyr2 in the same passes (the backward's x and
/// G: one barrier a level for both, and twice the loads in flight a position). Synchronises the
/// block after every level.
template <typename T, typename S>
__device__ void plane_pyramid(const PlaneGeom& g, const S* src, S* pyr, int warp,
                              const S* src2 = nullptr, S* pyr2 = nullptr) {
  for (int l = 0; l < g.L; ++l) {
    const int wp = g.w[l + 1], n = g.h[l + 1] * wp;
    const auto level = [&](const S* plane, S* levels, int pos) {
      const SPlane<const S> in{l == 0 ? plane : levels + g.pyr[l - 1] * 32, g.h[l], g.w[l]};
      pyramid_at<T>(in, levels + g.pyr[l] * 32, n, wp, pos);
    };
    for (int pos = warp; pos < n; pos += kPlaneWarps) {
      level(src, pyr, pos);
      if (src2 != nullptr) level(src2, pyr2, pos);
    }
    __syncthreads();
  }
}

/// plane_pyramid of the backward's x and G where x's level-0 plane is read from global memory
/// (x_global): level 0 from xg and the staged G plane gs, the levels after it from the pyramids.
template <typename T, typename S>
__device__ void plane_pyramid_xg(const PlaneGeom& g, const GPlane<T>& xg, S* xpyr, int warp,
                                 const S* gs, S* gpyr) {
  for (int l = 0; l < g.L; ++l) {
    const int wp = g.w[l + 1], n = g.h[l + 1] * wp;
    S* xo = xpyr + g.pyr[l] * 32;
    S* go = gpyr + g.pyr[l] * 32;
    for (int pos = warp; pos < n; pos += kPlaneWarps) {
      if (l == 0) {
        pyramid_at<T>(xg, xo, n, wp, pos);
        pyramid_at<T>(SPlane<const S>{gs, g.h[0], g.w[0]}, go, n, wp, pos);
      } else {
        pyramid_at<T>(SPlane<const S>{xpyr + g.pyr[l - 1] * 32, g.h[l], g.w[l]}, xo, n, wp, pos);
        pyramid_at<T>(SPlane<const S>{gpyr + g.pyr[l - 1] * 32, g.h[l], g.w[l]}, go, n, wp, pos);
      }
    }
    __syncthreads();
  }
}

/// The synthesis cascade of the pyramid `pyr`, ending in the level-0 step that writes image b of
/// out (PlaneOut's members: out_y = [bias] + conv(src, base filter) + rec_0, or a tail's out_rec
/// scaled by out_scale). src, pyr: this lane's first value of the plane and of its pyramid (smem +
/// lane); recs: the rec buffers' start; wl_sm, wb_sm: this lane's staged filters
/// (plane_stage_filters: folded, flipped for the backward, level taps rounded to bf16 for a bf16
/// T). Synchronises after every level.
template <typename T, typename S, typename W, int K, bool kBase>
__device__ void plane_cascade(const PlaneGeom& g, const S* src, const S* pyr, float* recs,
                              const W* wl_sm, const float* wb_sm, const float* __restrict__ bias,
                              int C, int c, int b, int warp, int lane, T* __restrict__ out_y,
                              float* __restrict__ out_rec, float out_scale) {
  constexpr int r = K / 2, KK = K * K, TQ = kPlaneTQ;
  const bool active = c < C;
  const int cs = active ? c : 0;  // a valid column for the weight loads of idle lanes
  for (int l = g.L - 1; l >= 0; --l) {
    const int hp = g.h[l + 1], wp = g.w[l + 1], n = hp * wp, nseg = (wp + TQ - 1) / TQ;
    const S* cl = pyr + g.pyr[l] * 32;
    const W* w_l = wl_sm + l * KK * 4 * 32;  // this lane's staged level-l taps
    const SPlane<const float> rin{l + 1 < g.L ? recs + g.rec[rec_slot(l + 1)] * 32 + lane : nullptr,
                                  hp, wp};
    const SPlane<float> rout{l >= 1 ? recs + g.rec[rec_slot(l)] * 32 + lane : nullptr, g.h[l],
                             g.w[l]};
    for (int item = warp; item < hp * nseg; item += kPlaneWarps) {
      const int p = item / nseg, q0 = (item % nseg) * TQ;
      float acc[4][TQ];
#pragma unroll
      for (int s = 0; s < 4; ++s)
#pragma unroll
        for (int t = 0; t < TQ; ++t) acc[s][t] = 0.f;
          // t_l at (p, q0 .. q0 + TQ - 1), every sub-band: taps in row-major order, rows outside
          // the grid skipped (as the CPU does); columns outside add w * 0
#pragma unroll
      for (int kh = 0; kh < K; ++kh) {
        const int pr = p + kh - r;
        if (pr < 0 || pr >= hp) continue;
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          // row pr of sub-band s from column q0 - r: one bounds test per column, the row is valid
          const S* row = cl + (s * n + pr * wp + q0 - r) * 32;
          float win[TQ + K - 1];
#pragma unroll
          for (int m = 0; m < TQ + K - 1; ++m)
            win[m] = unsigned(q0 - r + m) < unsigned(wp) ? to_f32(row[m * 32]) : 0.f;
#pragma unroll
          for (int kw = 0; kw < K; ++kw) {
            const float wv = to_f32(w_l[((kh * K + kw) * 4 + s) * 32]);
#pragma unroll
            for (int t = 0; t < TQ; ++t) acc[s][t] = fmaf(wv, win[t + kw], acc[s][t]);
          }
        }
      }
      // round as the level conv stores t_l, add the coarser levels, inverse Haar (1/2 per level)
      float rec[2][2 * TQ];
#pragma unroll
      for (int t = 0; t < TQ; ++t) {
        float4 tv = make_float4(to_f32(from_f32<T>(acc[0][t])), to_f32(from_f32<T>(acc[1][t])),
                                to_f32(from_f32<T>(acc[2][t])), to_f32(from_f32<T>(acc[3][t])));
        if (l + 1 < g.L && q0 + t < wp) tv.x += rin.at(p, q0 + t);
#pragma unroll
        for (int di = 0; di < 2; ++di)
#pragma unroll
          for (int dj = 0; dj < 2; ++dj) rec[di][2 * t + dj] = 0.5f * unhaar_at(tv, di, dj);
      }
      if (l >= 1) {
#pragma unroll
        for (int di = 0; di < 2; ++di)
#pragma unroll
          for (int m = 0; m < 2 * TQ; ++m) {
            const int i = 2 * p + di, j = 2 * q0 + m;
            if (i < g.h[l] && j < g.w[l]) rout.ref(i, j) = rec[di][m];
          }
        continue;
      }
      // level 0: rows 2p, 2p+1, columns 2 q0 .. 2 q0 + 2TQ - 1 of the output. A whole layer
      // writes y = bias + base conv + rec_0; a level tail its rec_0, scaled (no base conv)
      const int i0 = 2 * p, j0 = 2 * q0;
      float y[2][2 * TQ];  // bias + base conv (a whole layer)
      if constexpr (kBase) {
        const float* w_b = wb_sm;  // the staged base taps
#pragma unroll
        for (int di = 0; di < 2; ++di)
#pragma unroll
          for (int m = 0; m < 2 * TQ; ++m) y[di][m] = bias ? bias[cs] : 0.f;
#pragma unroll
        for (int a = 0; a < K + 1; ++a) {  // input rows i0 - r .. i0 + 1 + r
          const int ii = i0 - r + a;
          if (ii < 0 || ii >= g.h[0]) continue;
          const S* row = src + (ii * g.w[0] + j0 - r) * 32;
          float win[2 * TQ + K - 1];
#pragma unroll
          for (int m = 0; m < 2 * TQ + K - 1; ++m)
            win[m] = unsigned(j0 - r + m) < unsigned(g.w[0]) ? to_f32(row[m * 32]) : 0.f;
#pragma unroll
          for (int di = 0; di < 2; ++di) {
            const int kh = a - di;  // ii = (i0 + di) + kh - r
            if (kh < 0 || kh >= K) continue;
#pragma unroll
            for (int kw = 0; kw < K; ++kw) {
              const float wv = w_b[(kh * K + kw) * 32];
#pragma unroll
              for (int m = 0; m < 2 * TQ; ++m) y[di][m] = fmaf(wv, win[m + kw], y[di][m]);
            }
          }
        }
      }
      if (!active) continue;
#pragma unroll
      for (int di = 0; di < 2; ++di)
#pragma unroll
        for (int m = 0; m < 2 * TQ; ++m) {
          const int i = i0 + di, j = j0 + m;
          if (i >= g.h[0] || j >= g.w[0]) continue;
          const int64_t o = ((int64_t(b) * g.h[0] + i) * g.w[0] + j) * C + c;
          if constexpr (kBase)
            out_y[o] = from_f32<T>(y[di][m] + rec[di][m]);
          else
            out_rec[o] = out_scale * rec[di][m];
        }
    }
    __syncthreads();
  }
}

/// Forward: grid (ceil(C / 32), slices), kPlaneWarps warps, plane_fwd_layout<S>(g).bytes of shared
/// memory, its planes and level taps stored as S: T, or f32 for a bf16 T (exact either way; the
/// host picks, plane_forward in wtconv_plane_host.cu). A block runs images [slice * ipb, ...) in
/// turn and stages its filters once for all of them. x: the layer's input (a whole layer) or ll_s
/// (a level tail: wb and bias unused).
template <typename T, typename S, int K, bool kBase>
__global__ void __launch_bounds__(32 * kPlaneWarps, 3)  // 3 blocks: <= 85 registers a thread
    plane_forward_kernel(const T* __restrict__ x, int B, int C, int ipb, PlaneGeom g,
                         const float* __restrict__ wb, const float* __restrict__ bias,
                         const T* __restrict__ wl, T* __restrict__ y, float* __restrict__ rec,
                         float rec_scale) {
  extern __shared__ __align__(16) unsigned char plane_smem_raw[];
  const PlaneFwdLayout lay = plane_fwd_layout<S>(g);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int c = blockIdx.x * 32 + lane;
  const int b0 = blockIdx.y * ipb, b1 = min(B, b0 + ipb);
  S* xs = reinterpret_cast<S*>(plane_smem_raw) + lane;
  S* pyr = xs + g.h[0] * g.w[0] * 32;
  float* recs = reinterpret_cast<float*>(plane_smem_raw + lay.rec_off);
  float* wb_sm = reinterpret_cast<float*>(plane_smem_raw + lay.wb_off) + lane;
  S* wl_sm = reinterpret_cast<S*>(plane_smem_raw + lay.wl_off) + lane;
  for (int b = b0; b < b1; ++b) {
    plane_load(x, b, g.h[0], g.w[0], C, c, xs, warp);
    if (b == b0) {
      plane_stage_filters<S>(g, wl, wb, C, c, warp, wl_sm, wb_sm);  // synchronises: x is in too
    } else {
      async_wait<0>();  // (the previous image's cascade ended with a barrier: xs is free)
      __syncthreads();
    }
    plane_pyramid<T>(g, xs, pyr, warp);
    plane_cascade<T, S, S, K, kBase>(g, xs, pyr, recs, wl_sm, wb_sm, bias, C, c, b, warp, lane, y,
                                     rec, rec_scale);
  }
}

/// This image's weight-gradient sums of one plane pair, item (plane, kh): acc[kw] = sum over
/// output positions (i, j) of gp(i, j) * xp(i + kh - r, j + kw - r).
template <typename T, int K>
__device__ void plane_wgrad_row(const SPlane<const T>& xp, const SPlane<const T>& gp, int kh,
                                float (&acc)[K]) {
  constexpr int r = K / 2;
#pragma unroll
  for (int kw = 0; kw < K; ++kw) acc[kw] = 0.f;
  const int w = xp.w;  // the planes of a pair share their grid
  for (int i = 0; i < gp.h; ++i) {
    const int ii = i + kh - r;
    if (ii < 0 || ii >= xp.h) continue;
    const T* xrow = xp.base + ii * w * 32;  // a valid row: one bounds test per column
    const T* grow = gp.base + i * w * 32;
    float win[K];
#pragma unroll
    for (int m = 0; m + 1 < K; ++m)
      win[m + 1] = unsigned(m - r) < unsigned(w) ? to_f32(xrow[(m - r) * 32]) : 0.f;
    for (int j = 0; j < w; ++j) {
#pragma unroll
      for (int m = 0; m + 1 < K; ++m) win[m] = win[m + 1];
      win[K - 1] = j + r < w ? to_f32(xrow[(j + r) * 32]) : 0.f;
      const float gv = to_f32(grow[j * 32]);
#pragma unroll
      for (int kw = 0; kw < K; ++kw) acc[kw] = fmaf(gv, win[kw], acc[kw]);
    }
  }
}

/// The same sums with x's plane in global memory (GPlane, x_global): a row's columns taken
/// kCols at a time, their window's loads issued together (each a load from L1 or L2, not a
/// shared-memory access: one at a time, each would wait its latency). The same products, added in
/// the same order.
template <typename T, int K>
__device__ void plane_wgrad_row(const GPlane<T>& xp, const SPlane<const T>& gp, int kh,
                                float (&acc)[K]) {
  constexpr int r = K / 2, kCols = 8;
#pragma unroll
  for (int kw = 0; kw < K; ++kw) acc[kw] = 0.f;
  const int w = xp.w;
  for (int i = 0; i < gp.h; ++i) {
    const int ii = i + kh - r;
    if (ii < 0 || ii >= xp.h) continue;
    const T* grow = gp.base + i * w * 32;
    for (int j0 = 0; j0 < w; j0 += kCols) {
      float win[kCols + K - 1];
#pragma unroll
      for (int m = 0; m < kCols + K - 1; ++m) win[m] = xp.at(ii, j0 - r + m);
#pragma unroll
      for (int t = 0; t < kCols; ++t) {
        if (j0 + t < w) {
          const float gv = to_f32(grow[(j0 + t) * 32]);
#pragma unroll
          for (int kw = 0; kw < K; ++kw) acc[kw] = fmaf(gv, win[t + kw], acc[kw]);
        }
      }
    }
  }
}

/// Backward: grid (ceil(C / 32), slices); each block takes images [slice * ipb, ...) in order and
/// accumulates its weight-gradient sums into partial (slices, NE, C) f32, NE = planes K*K + base,
/// planes = base + 4L (entry plane * K*K + tap; with the base: plane 0 the base and the last entry
/// sum G; plane base + 4l + s: level l sub-band s). x, G: the layer's input and dL/dy (a whole
/// layer) or the LL bands ll_s and gR_s (a level tail). gx: grad_x (a whole layer) or the tail's
/// term of the G synthesis (PlaneOut), none when both its pointers are null. wb, wl: the flipped
/// folded filters. kXGlobal: x's level-0 plane is read from global memory, not staged
/// (plane_bwd_layout's x_global; the host takes it where more blocks then fit a multiprocessor).
template <typename T, int K, bool kBase, bool kXGlobal>
__global__ void __launch_bounds__(32 * kPlaneWarps, 3)  // 3 blocks: <= 85 registers a thread
    plane_backward_kernel(const T* __restrict__ x, const T* __restrict__ G, int B, int C, int ipb,
                          PlaneGeom g, const float* __restrict__ wb, const T* __restrict__ wl,
                          float* __restrict__ partial, T* __restrict__ gx, float* __restrict__ grec,
                          float grec_scale) {
  constexpr int KK = K * K;
  extern __shared__ __align__(16) unsigned char plane_smem_raw[];
  const PlaneBwdLayout lay = plane_bwd_layout<T>(g, kXGlobal);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int c = blockIdx.x * 32 + lane;
  const int n0 = g.h[0] * g.w[0];
  T* gs = reinterpret_cast<T*>(plane_smem_raw) + lane;  // region A
  T* gpyr = gs + n0 * 32;
  T* xs = reinterpret_cast<T*>(plane_smem_raw + lay.b_off) + lane;  // region B, first the sums'
  T* xpyr = kXGlobal ? xs : xs + n0 * 32;
  T* wl_sm = reinterpret_cast<T*>(plane_smem_raw + lay.b_off) + lane;  // then the cascade's
  float* wb_sm = reinterpret_cast<float*>(plane_smem_raw + lay.wb_off) + lane;
  float* recs = reinterpret_cast<float*>(plane_smem_raw + lay.rec_off);
  constexpr int base = kBase ? 1 : 0;  // g.base, as a constant
  const int planes = base + 4 * g.L, items = planes * K, NE = planes * KK + base;
  const bool want_gx = gx != nullptr || grec != nullptr;
  float* part = partial + int64_t(blockIdx.y) * NE * C + c;
  const int b0 = blockIdx.y * ipb, b1 = min(B, b0 + ipb);
  for (int b = b0; b < b1; ++b) {
    if (!kXGlobal) plane_load(x, b, g.h[0], g.w[0], C, c, xs, warp);
    plane_load(G, b, g.h[0], g.w[0], C, c, gs, warp);
    async_wait<0>();
    __syncthreads();
    const GPlane<T> xg{x + int64_t(b) * n0 * C + (c < C ? c : 0), g.h[0], g.w[0], C, c < C};
    if constexpr (kXGlobal)
      plane_pyramid_xg<T>(g, xg, xpyr, warp, gs, gpyr);
    else
      plane_pyramid<T>(g, xs, xpyr, warp, gs, gpyr);
    // weight-gradient sums, one (plane, kh) item per warp at a time; the same thread owns an
    // entry for every image of the slice, so adding into `part` needs no atomics (deterministic)
    for (int it = warp; it < items; it += kPlaneWarps) {
      const int pl = it / K, kh = it % K;
      SPlane<const T> xp{xs, g.h[0], g.w[0]}, gp{gs, g.h[0], g.w[0]};
      if (pl >= base) {
        const int l = (pl - base) / 4, s = (pl - base) % 4, hp = g.h[l + 1], wp = g.w[l + 1];
        const int off = (g.pyr[l] + s * hp * wp) * 32;
        xp = {xpyr + off, hp, wp};
        gp = {gpyr + off, hp, wp};
      }
      float acc[K];
      if constexpr (kXGlobal) {  // the base plane's x from global memory
        if (pl < base)
          plane_wgrad_row<T, K>(xg, gp, kh, acc);
        else
          plane_wgrad_row<T, K>(xp, gp, kh, acc);
      } else {
        plane_wgrad_row<T, K>(xp, gp, kh, acc);
      }
      if (c < C) {
#pragma unroll
        for (int kw = 0; kw < K; ++kw) {
          float* e = part + int64_t(pl * KK + kh * K + kw) * C;
          *e = (b == b0 ? 0.f : *e) + acc[kw];
        }
      }
    }
    if (kBase && warp == kPlaneWarps - 1 && c < C) {  // sum of G (the base bias)
      float s = 0.f;
      for (int pix = 0; pix < n0; ++pix) s += to_f32(gs[pix * 32]);
      float* e = part + int64_t(NE - 1) * C;
      *e = (b == b0 ? 0.f : *e) + s;
    }
    if (want_gx) {
      __syncthreads();  // the sums above read region B's x; the filters and rec buffers go there
      plane_stage_filters<T>(g, wl, wb, C, c, warp, wl_sm, wb_sm);
      plane_cascade<T, T, T, K, kBase>(g, gs, gpyr, recs, wl_sm, wb_sm, nullptr, C, c, b, warp,
                                       lane, gx, grec, grec_scale);
    }
    __syncthreads();  // the next image overwrites the planes
  }
}

/// Sums the slices of plane_backward_kernel's partial and unfolds them into the parameter
/// gradients (base: 1 for a whole layer, 0 for a level tail, whose lp then starts at level s and
/// whose bw .. gbs are unused). Grid (base + 4L, ceil(C / 32)), block (32, kPlaneWarps),
/// plane_reduce_smem<K>() bytes of dynamic shared memory. Warp w sums the w-th contiguous run of
/// slices for every entry of the block's plane (all of a slice's entries are independent loads in
/// flight at once), then the warps' sums are added in warp order: a fixed order, so bit-identical
/// run to run.
template <int K>
constexpr size_t plane_reduce_smem() {
  return sizeof(float) * (kPlaneWarps + 1) * (K * K + 1) * 32;
}

template <int K>
__global__ void __launch_bounds__(32 * kPlaneWarps, 2)  // <= 128 registers: U (below)
    plane_wgrad_reduce_kernel(const float* __restrict__ partial, int slices, int C, int L, int base,
                              const float* __restrict__ bw, const float* __restrict__ bb,
                              const float* __restrict__ bs, float* __restrict__ gbw,
                              float* __restrict__ gbb, float* __restrict__ gbs, LevelParams lp) {
  constexpr int KK = K * K;
  // all dynamic (allow_max_dynamic_smem leaves no room for static shared memory):
  // red [kPlaneWarps][KK + 1][32], the warps' sums, then sums [KK + 1][32], the block's
  extern __shared__ float red[];
  float(*sums)[32] = reinterpret_cast<float(*)[32]>(red + kPlaneWarps * (KK + 1) * 32);
  const int pl = blockIdx.x, lane = threadIdx.x, warp = threadIdx.y;
  const int c = blockIdx.y * 32 + lane, NE = (base + 4 * L) * KK + base;
  const bool base_plane = base && pl == 0;
  const int n = base_plane ? KK + 1 : KK;  // the base plane also sums G
  const int z0 = warp * slices / kPlaneWarps, z1 = (warp + 1) * slices / kPlaneWarps;
  float acc[KK + 1];
#pragma unroll
  for (int k = 0; k <= KK; ++k) acc[k] = 0.f;
  if (c < C) {
    const int64_t stride = int64_t(NE) * C;
    const float* p = partial + int64_t(pl) * KK * C + c;  // entry pl * KK + k at p + k * C
    const float* pg = partial + int64_t(NE - 1) * C + c;  // the sum of G
    // U slices' loads in flight before any is added (added in slice order, as one at a time
    // would): the compiler kept one slice's KK + 1 loads in flight, so a warp waited one memory
    // latency per slice (18.8 us for a 96-channel level tail at B = 64, ncu, seventeenth session).
    // About 80 loaded values a thread, so that two blocks still fit a multiprocessor.
    constexpr int U = 80 / (KK + 1) < 1 ? 1 : 80 / (KK + 1) > 8 ? 8 : 80 / (KK + 1);
    int z = z0;
    for (; z + U <= z1; z += U) {
      float v[U][KK + 1];
#pragma unroll
      for (int u = 0; u < U; ++u) {
#pragma unroll
        for (int k = 0; k < KK; ++k) v[u][k] = __ldg(p + (z + u) * stride + int64_t(k) * C);
        v[u][KK] = base_plane ? __ldg(pg + (z + u) * stride) : 0.f;
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k <= KK; ++k) acc[k] += v[u][k];
    }
    for (; z < z1; ++z) {
#pragma unroll
      for (int k = 0; k < KK; ++k) acc[k] += __ldg(p + z * stride + int64_t(k) * C);
      if (base_plane) acc[KK] += __ldg(pg + z * stride);
    }
  }
#pragma unroll
  for (int k = 0; k <= KK; ++k) red[(warp * (KK + 1) + k) * 32 + lane] = acc[k];
  __syncthreads();
  for (int k = warp; k < n; k += kPlaneWarps) {
    float s = 0.f;
    for (int w = 0; w < kPlaneWarps; ++w) s += red[(w * (KK + 1) + k) * 32 + lane];
    sums[k][lane] = s;
  }
  __syncthreads();
  if (warp != 0 || c >= C) return;
  if (base_plane) {  // dL/dbw = bs dL/dw~, dL/dbb = bs dL/db~, dL/dbs = sum dL/dw~ bw + dL/db~ bb
    const float gs =
        unfold_filter(&sums[0][lane], 32, bw + int64_t(c) * KK, bs[c], KK, gbw + int64_t(c) * KK);
    gbb[c] = bs[c] * sums[KK][lane];
    gbs[c] = fmaf(sums[KK][lane], bb[c], gs);
    return;
  }
  const int l = (pl - base) / 4, s = (pl - base) % 4, e = 4 * c + s;  // PyTorch channel 4c + s
  lp.gws[l][e] = unfold_filter(&sums[0][lane], 32, lp.ww[l] + int64_t(e) * KK, lp.ws[l][e], KK,
                               lp.gww[l] + int64_t(e) * KK);
}

}  // namespace hg::kernels::cuda::wtconv_detail
