// The one-pass synthesis fused with the base conv, with the input rows staged in shared memory
// (stride 1, K = 3, 5, 7; bf16 and f32 activations): the fast path of
// wtconv_synthesis.cu's synthesis (the forward y, and grad_x as the same synthesis of dL/dy with
// flipped filters). The base conv is the staged depthwise
// forward of kernels/cuda/depthwise_conv.cu (staged_rows.cuh: rows in shared memory, a sliding
// register window, two output rows per thread); the level terms are added per output pixel from
// two tensors: t_0, level 0's output (B, hp, wp, 4, C) as sub-band planes, and R (B, hp, wp, C),
// levels 1..L-1 already synthesised to level 0's grid by levels_synth_kernel (or, where level 1
// is the only split level after level 0, R formed here from t_1 and the tail's term). By linearity
//   y(i, j) = base(i, j) + 1/2 unhaar(t_0(i>>1, j>>1); i&1, j&1) + R(i>>1, j>>1),
//   R(p, q) = sum_{l >= 1} 2^-(l+1) unhaar(t_l(p>>l, q>>l); bit l-1 of p, bit l-1 of q),
// which is the one-pass synthesis of docs/wtconv-operator.md, item 2, summed in another order.
// (synth_v4_kernel in wtconv_vec.cuh, the fallback, reads the input from global memory per tap
// and every level per pixel.) Activations and t_l of storage T = float or __nv_bfloat16; weights
// and R f32.
// Compiled as C++17 by nvcc: include only core/tensor.h, core/error.h, kernels/*.h,
// kernels/cuda/*.h.
#pragma once

#include "kernels/cuda/staged_rows.cuh"
#include "kernels/cuda/wtconv_vec.cuh"

namespace hg::kernels::cuda::wtconv_detail {

/// R = levels 1 .. lv.L - 1 synthesised onto level 0's grid (hp, wp) (formula above; t_l is
/// lv.t[l], of grid (lv.hp[l], lv.wp[l]), storage P), plus the level tail's term when there is one
/// (then lv.L = tail.s). R stays f32: it is summed into y (or grad_x) before the one rounding
/// there. Grid (ceil(wp C / 4 / 256), hp, B), 256 threads: one thread, one position (b, p, q) and
/// 4 channels (4-element loads of t_l, 16-byte stores of R; C % 4 == 0, t_l aligned to 4
/// elements, R to 16 bytes). Needs lv.L >= 2. (Its index came from a flat 64-bit thread index
/// before, six 64-bit divisions a thread: ~250 instructions a thread, 14.6 us at 96/56/5, B = 64,
/// for ~29 MB moved, 19 of them R's f32 stores; 12.2 us now.)
template <typename P>
__global__ void __launch_bounds__(256) levels_synth_kernel(Levels<P> lv, LevelTail tail, int hp,
                                                           int wp, int C, float* __restrict__ R) {
  const int cv = C / 4, i = int(blockIdx.x) * 256 + int(threadIdx.x);
  if (i >= wp * cv) return;
  const int q = i / cv, c = (i - q * cv) * 4, p = int(blockIdx.y), b = int(blockIdx.z);
  const int64_t pos = (int64_t(b) * hp + p) * wp + q;
  float4 s = f4(0.f);
  float f = 0.25f;  // 2^-(l+1) at l = 1
  for (int l = 1; l < lv.L; ++l, f *= 0.5f) {
    float4 tb[4];  // sub-bands 0..3 of channels c .. c+3
    load_bands4(lv.t[l], (int64_t(b) * lv.hp[l] + (p >> l)) * lv.wp[l] + (q >> l), C, c, tb);
    const int rb = (p >> (l - 1)) & 1, cb = (q >> (l - 1)) & 1;
    s.x = fmaf(f, unhaar_at(make_float4(tb[0].x, tb[1].x, tb[2].x, tb[3].x), rb, cb), s.x);
    s.y = fmaf(f, unhaar_at(make_float4(tb[0].y, tb[1].y, tb[2].y, tb[3].y), rb, cb), s.y);
    s.z = fmaf(f, unhaar_at(make_float4(tb[0].z, tb[1].z, tb[2].z, tb[3].z), rb, cb), s.z);
    s.w = fmaf(f, unhaar_at(make_float4(tb[0].w, tb[1].w, tb[2].w, tb[3].w), rb, cb), s.w);
  }
  if (tail.r != nullptr) {
    const int sh = tail.s - 1;
    add4(s, *reinterpret_cast<const float4*>(
                tail.r + ((int64_t(b) * tail.h + (p >> sh)) * tail.w + (q >> sh)) * C + c));
  }
  *reinterpret_cast<float4*>(R + pos * C + c) = s;
}

/// Sizes of synth_staged_kernel's launch (int32: the host checks).
struct SynthDims {
  int B, H, W, C, hp, wp;
};

/// Level 1 and the level tail for synth_staged_kernel<T, K, true>: t1 = t_1 (B, h1, w1, 4, C) of
/// storage T and r1, the tail's term on the same grid (B, h1, w1, C) f32 (null: no tail), where
/// the layer has exactly one split level after level 0 (96/56/5's levels 1 and 2-4).
template <typename T>
struct SynthLevel1 {
  const T* t1;
  const float* r1;
  int h1, w1;
};

/// Warps of a synth_staged_kernel block.
constexpr int kSynthWarps = 8;

// The work is items: (32 channels [32 blockIdx.y, + 32), image b, output rows [i0, i0 + 2 PR)),
// and a block walks items blockIdx.x, + gridDim.x, ... of its channel group (the grid is sized
// to the blocks that fit the device at once). For each item the block stages input rows
// [i0 - r, i0 + 2 PR + r) over columns [-r, W + r) (zeros outside) and the item's level-0 rows
// [i0 / 2, i0 / 2 + PR) of t_0 and R (zeros past hp) into one of two buffers, the next item's
// copies in flight (cp.async) while it computes this one: staging and the column loop
// each took about half of the kernel's time, one after the other (Nsight at 96/56/5: 47 us staging
// alone, 52 us loop alone, 94 us both, with each block staging then computing). Each warp takes one
// row pair (ia even, ia + 1) and one column strip; a thread (one channel) keeps the K x K folded
// filter in registers (wb is (K*K, C), already flipped for grad_x, not rounded: the WTConv kernels
// compute with f32 weights). Both rows of the pair and two neighbouring columns share one t_0
// (storage T) and one R (f32) position.
// kL1: where the layer has exactly one split level after level 0, the block stages its rows of t_1
// and of the tail's term (l1) instead of R and forms R's value at each level-0 position as
// levels_synth_kernel would, with the same operations (bit for bit; PR even): one launch less,
// and no f32 R written and read back (docs/fused-wtconv.md section 21).
// NB staging buffers (staged_buffers). One block a multiprocessor at K = 7, and with two f32
// buffers (~97-99 KB each at 56 x 56, K = 5): the registers then need no cap.
template <typename T, int KT, bool kL1, int NB>
__global__ void __launch_bounds__(32 * kSynthWarps, KT >= 7 || (sizeof(T) == 4 && NB == 2) ? 1 : 2)
    synth_staged_kernel(const T* __restrict__ x, const float* __restrict__ wb,
                        const float* __restrict__ bf, SynthDims d, int PR, const T* __restrict__ t0,
                        const float* __restrict__ R, SynthLevel1<T> l1, T* __restrict__ y) {
  constexpr int K = KT, KR = KT + 1, r = KT / 2, kThreads = 32 * kSynthWarps;
  extern __shared__ uint4 stage[];
  const int RS = 2 * PR + K - 1, WS = d.W + K - 1;  // staged rows and columns
  // one buffer (sizes in 16-byte units): x rows [RS][WS][32], t_0 rows [PR][wp][4][32], then R
  // rows [PR][wp][32] (f32), or with kL1 t_1 rows [PR / 2][w1][4][32] and the tail's term's rows
  // [PR / 2][w1][32] (f32), elements of 32 channels each
  const int x_vec = RS * WS * 32 * int(sizeof(T)) / 16,
            t0_vec = PR * d.wp * 4 * 32 * int(sizeof(T)) / 16,
            t1_vec = kL1 ? PR / 2 * l1.w1 * 4 * 32 * int(sizeof(T)) / 16 : 0,
            buf_vec = x_vec + t0_vec + (kL1 ? t1_vec + PR / 2 * l1.w1 * 8 : PR * d.wp * 8);
  const int lane = threadIdx.x, warp = threadIdx.y, c0 = blockIdx.y * 32, c = c0 + lane;
  const int strips = kSynthWarps / PR, pair = warp / strips, strip = warp % strips;
  // strips of an even width (column pairs share their level terms)
  const int SW = ((d.W + strips - 1) / strips + 1) & ~1, ja = strip * SW, jb = min(d.W, ja + SW);
  const int G = (d.H + 2 * PR - 1) / (2 * PR), items = d.B * G;
  // t_0 (B, hp, wp, 4, C) is an image of hp rows and 4 wp columns; R (B, hp, wp, C) one of wp;
  // with kL1 t_1 one of h1 rows and 4 w1 columns, the tail's term one of w1
  const auto walk_x = stage_walk<T, kThreads>(WS), walk_t0 = stage_walk<T, kThreads>(4 * d.wp);
  const auto walk_R = stage_walk<float, kThreads>(kL1 ? l1.w1 : d.wp);
  const auto walk_t1 = stage_walk<T, kThreads>(kL1 ? 4 * l1.w1 : 1);  // (no division by 0)
  auto stage_item = [&](int64_t it, int buf) {
    const int item = int(it), b = item / G, i0 = item % G * 2 * PR;
    uint4* dst = stage + buf * buf_vec;
    stage_rows_async<T, kThreads>(x + int64_t(b) * d.H * d.W * d.C, d.H, d.W, d.C, i0 - r, RS, -r,
                                  WS, c0, dst, walk_x);
    stage_rows_async<T, kThreads>(t0 + int64_t(b) * d.hp * d.wp * 4 * d.C, d.hp, 4 * d.wp, d.C,
                                  i0 / 2, PR, 0, 4 * d.wp, c0, dst + x_vec, walk_t0);
    if constexpr (kL1) {  // level-1 rows [i0 / 4, + PR / 2) of t_1 and of the tail's term
      stage_rows_async<T, kThreads>(l1.t1 + int64_t(b) * l1.h1 * l1.w1 * 4 * d.C, l1.h1, 4 * l1.w1,
                                    d.C, i0 / 4, PR / 2, 0, 4 * l1.w1, c0, dst + x_vec + t0_vec,
                                    walk_t1);
      if (l1.r1)
        stage_rows_async<float, kThreads>(l1.r1 + int64_t(b) * l1.h1 * l1.w1 * d.C, l1.h1, l1.w1,
                                          d.C, i0 / 4, PR / 2, 0, l1.w1, c0,
                                          dst + x_vec + t0_vec + t1_vec, walk_R);
    } else if (R) {
      stage_rows_async<float, kThreads>(R + int64_t(b) * d.hp * d.wp * d.C, d.hp, d.wp, d.C, i0 / 2,
                                        PR, 0, d.wp, c0, dst + x_vec + t0_vec, walk_R);
    }
  };
  float wr[K][K];
#pragma unroll
  for (int p = 0; p < K; ++p)
#pragma unroll
    for (int q = 0; q < K; ++q) wr[p][q] = c < d.C ? wb[int64_t(p * K + q) * d.C + c] : 0.f;
  const float bias = bf && c < d.C ? bf[c] : 0.f;
  staged_items<NB>(blockIdx.x, gridDim.x, items, stage_item, [&](int64_t it, int buf) {
    const int item = int(it);
    const int b = item / G, ia = item % G * 2 * PR + 2 * pair;  // output rows ia (even), ia + 1
    if (c >= d.C || ia >= d.H || ja >= jb) return;
    const T* xs = reinterpret_cast<const T*>(stage + buf * buf_vec);
    const bool second = ia + 1 < d.H;
    const T* xr = xs + 2 * pair * WS * 32 + lane;  // staged input row m of the pair: + m WS 32
    T* ya = y + (int64_t(b) * d.H + ia) * d.W * d.C + c;
    T* yb = ya + int64_t(d.W) * d.C;
    const T* t0r = reinterpret_cast<const T*>(stage + buf * buf_vec + x_vec) +
                   pair * d.wp * 4 * 32 + lane;  // the pair's level-0 row of t_0
    const float* Rr = !kL1 && R
                          ? reinterpret_cast<const float*>(stage + buf * buf_vec + x_vec + t0_vec) +
                                pair * d.wp * 32 + lane
                          : nullptr;
    // kL1: the pair's level-0 row p = i0 / 2 + pair (i0 / 2 even) reads t_1's row p >> 1, the
    // staged row pair >> 1, with row bit p & 1 = pair & 1
    const T* t1r = kL1 ? reinterpret_cast<const T*>(stage + buf * buf_vec + x_vec + t0_vec) +
                             (pair >> 1) * l1.w1 * 4 * 32 + lane
                       : nullptr;
    const float* r1r =
        kL1 && l1.r1
            ? reinterpret_cast<const float*>(stage + buf * buf_vec + x_vec + t0_vec + t1_vec) +
                  (pair >> 1) * l1.w1 * 32 + lane
            : nullptr;
    const int rb1 = pair & 1;
    // Columns in pairs (j even, j + 1), the strip starting at an even column: a pair shares one
    // t_0 and one R position, whose level terms are row ia: e + o (j), e - o (j + 1), row ia + 1
    // the same with its own e, o (unhaar_at with the 1/2 of level 0). With W odd the last strip's
    // last pair has no column j + 1: it is computed on whatever follows the staged row in shared
    // memory (the next staged row, or the t_0 rows after the last one) and not stored. Pointers
    // advance by the pair: no 64-bit index arithmetic per store.
    const T* tp = t0r + (ja >> 1) * 4 * 32;
    const float* rp = Rr ? Rr + (ja >> 1) * 32 : nullptr;
    T* pa = ya + int64_t(ja) * d.C;
    T* pb = yb + int64_t(ja) * d.C;
    const int C = d.C;
    float win[KR][K];
    window_start<T, K>(xr, WS, ja, win);
    // one column pair (j, j + 1), then the pointers on to the next pair
    auto column_pair = [&](int j) {
      const float s0 = staged_value(tp), s1 = staged_value(tp + 32), s2 = staged_value(tp + 64),
                  s3 = staged_value(tp + 96);
      float rv;
      if constexpr (kL1) {  // levels_synth_kernel's value at level-0 column q = j / 2
        const T* tq = t1r + (j >> 2) * 4 * 32;
        const float u = unhaar_at(make_float4(staged_value(tq), staged_value(tq + 32),
                                              staged_value(tq + 64), staged_value(tq + 96)),
                                  rb1, (j >> 1) & 1);
        rv = fmaf(0.25f, u, 0.f);
        if (r1r) rv = rv + r1r[(j >> 2) * 32];
      } else {
        rv = rp ? rp[0] : 0.f;
      }
      const float ea = fmaf(0.5f, s0 + s1, rv), oa = 0.5f * (s2 + s3);
      const float eb = fmaf(0.5f, s0 - s1, rv), ob = 0.5f * (s2 - s3);
      window_advance<T, K>(xr, WS, j, win);
      float a0 = bias, a1 = bias;
      pair_taps<K>(wr, win, a0, a1);
      st(pa, a0 + (ea + oa));
      if (second) st(pb, a1 + (eb + ob));
      window_advance<T, K>(xr, WS, j + 1, win);
      a0 = bias;
      a1 = bias;
      pair_taps<K>(wr, win, a0, a1);
      if (j + 1 < jb) {
        st(pa + C, a0 + (ea - oa));
        if (second) st(pb + C, a1 + (eb - ob));
      }
      tp += 4 * 32;
      if (rp) rp += 32;
      pa += 2 * C;
      pb += 2 * C;
    };
    // Whole periods of K pairs (2K columns: the window's registers are back in place), then the
    // strip's last pairs unrolled as well: a rolled remainder moved the window between registers
    // every column (112 instructions a column against 91; at W = 56 four of a strip's 14 columns,
    // ~20% of the kernel's instructions in Nsight's counts).
    int j = ja;
    for (; j + 2 * (K - 1) < jb; j += 2 * K) {
#pragma unroll
      for (int u = 0; u < K; ++u) column_pair(j + 2 * u);
    }
#pragma unroll
    for (int u = 0; u < K - 1; ++u) {
      if (j + 2 * u >= jb) break;
      column_pair(j + 2 * u);
    }
  });
}

/// synth_staged_kernel for a launch: with the level-1 fold (two buffers only) or not, with nb
/// buffers (staged_buffers: one for f32 only, so bf16 has no one-buffer instantiation), as
/// wgrad_staged picks the depthwise weight gradient's.
template <typename T, int KT>
auto synth_staged(bool level1, int nb) {
  if (level1) return synth_staged_kernel<T, KT, true, 2>;
  if constexpr (sizeof(T) == 4)
    if (nb == 1) return synth_staged_kernel<T, KT, false, 1>;
  return synth_staged_kernel<T, KT, false, 2>;
}

/// Shared memory of synth_staged_kernel: its nb buffers, each the staged input rows, then the PR
/// level-0 rows of t_0 (storage T) and of R (f32), level 0's grid (hp, wp) = (ceil(H / 2),
/// ceil(W / 2)); with level1 (kL1) the PR / 2 level-1 rows of t_1 (storage T) and of the tail's
/// term (f32) instead of R's, level 1's grid (h1, w1) = (ceil(hp / 2), ceil(wp / 2)).
template <typename T>
size_t synth_staged_smem(int K, int PR, int W, bool level1, int nb) {
  const size_t wp = size_t(wtconv_level_size(W)), w1 = size_t(wtconv_level_size(int64_t(wp)));
  const size_t levels = level1 ? sizeof(T) * 4 * 32 * size_t(PR) * wp +
                                     (sizeof(T) * 4 + sizeof(float)) * 32 * size_t(PR / 2) * w1
                               : (sizeof(T) * 4 + sizeof(float)) * 32 * size_t(PR) * wp;
  return size_t(nb) * (sizeof(T) * 32 * size_t(2 * PR + K - 1) * size_t(W + K - 1) + levels);
}

}  // namespace hg::kernels::cuda::wtconv_detail
