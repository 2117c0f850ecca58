// WTConv2d on the CPU in the fused formulation (Aflalo et al. 2026; docs/wtconv-operator.md):
//   1. each level's Haar coefficients are formed once from the raw low band into a workspace
//      array that the level's depthwise conv reads (the paper forms them inside the conv at every
//      tap: the same values; K^2 times the Haar sums), and dropped after the level;
//   2. the synthesis cascade is one pass: output pixel (i, j) adds, from every level l, the conv
//      output at (i >> (l+1), j >> (l+1)) with the signs of the parity bits of i >> l, j >> l and a
//      factor 1/2 per level (the odd-size crops need no special case, the doc explains why);
//   3. the scales are folded into the weights (w~ = scale * w, base bias~ = scale * bias), and the
//      gradients unfolded at the end (dL/dw = scale * dL/dw~, dL/dscale = sum(dL/dw~ * w) + ...).
// The backward has the same shape: dL/dt_l is the analysis of the level-l gradient (formed once a
// level, as x's); dL/dx is a one-pass synthesis of the per-level input gradients of the convs.
//
// Layout: NHWC with channels innermost in every loop; folded weights are re-laid out as
// [tap][sub-band][C] so the channel loop reads them contiguously. Rows are split over OpenMP
// threads; weight gradients sum fixed chunks of rows in a fixed order (deterministic).
//
// Storage policy S: KeepPlanes (the f32 and f64 ops: every intermediate in T) or Bf16Planes (the
// bf16 op, T = float: the values the CUDA kernels store as bf16 are rounded where they store them;
// kernels/wtconv.h, docs/fused-wtconv.md section 8).
#include <algorithm>
#include <cmath>

#include "core/memory.h"
#include "kernels/cpu/wtconv_common.h"

namespace hg::kernels::cpu::wtconv_detail {
namespace {

/// The f32 and f64 ops: coefficients, level outputs and pyramids kept in T, sums in loop order.
struct KeepPlanes {
  template <typename T>
  static void analysis(T a, T b, T c, T d, T (&s)[4]) {
    haar_analysis(a, b, c, d, s[0], s[1], s[2], s[3]);
  }
  template <typename T>
  static T filter(T w) {
    return w;
  }
  template <typename T>
  static void mac(T& acc, T w, T v) {
    acc += w * v;
  }
  template <typename T>
  static T store(T v) {
    return v;
  }
  static constexpr bool kRounds = false;
};

/// The bf16 op (T = float): the CUDA split path stores the Haar coefficient planes of x and G, the
/// LL pyramids, the level outputs t_l and the level gradients as bf16, each computed in f32 and
/// rounded once (round to nearest even), and its bf16 level convs use the folded filters rounded to
/// bf16 (kernels/conv2d.h). To round the same f32 values the GPU rounds, this policy also follows
/// the GPU's f32 operation order where a rounding follows: the Haar sums as haar4 adds them
/// (kernels/cuda/wtconv_common.cuh), and each level conv as one fused multiply-add per tap in
/// row-major order of the filter it applies (the flipped one for the transposed conv), starting
/// from 0, as every variant of depthwise_conv_forward does.
struct Bf16Planes {
  static float round(float v) { return bf16_to_f32(f32_to_bf16(v)); }
  static void analysis(float a, float b, float c, float d, float (&s)[4]) {
    s[0] = round(0.5f * (a + b + c + d));
    s[1] = round(0.5f * (a + b - c - d));
    s[2] = round(0.5f * (a - b + c - d));
    s[3] = round(0.5f * (a - b - c + d));
  }
  static float filter(float w) { return round(w); }
  static void mac(float& acc, float w, float v) { acc = std::fma(w, v, acc); }
  static float store(float v) { return round(v); }
  static constexpr bool kRounds = true;
};

/// Weights with the scales folded in, in kernel-friendly layouts.
template <typename T>
struct Folded {
  std::vector<T> base_w;             ///< [K*K][C]: base_scale[c] * base_weight[c, tap]
  std::vector<T> base_b;             ///< [C]: base_scale[c] * base_bias[c]
  std::vector<std::vector<T>> wave;  ///< per level [K*K][4][C]: scale[4c+s] * weight[4c+s, tap]
};

/// Folds the scales in; the level filters as S's level convs apply them (S::filter).
template <typename T, typename S>
Folded<T> fold(const DenseWeights& w, const Geometry& g) {
  const int64_t C = g.C, KK = int64_t(g.K) * g.K;
  Folded<T> f;
  const T *bw = w.base_weight.data<T>(), *bb = w.base_bias.data<T>(), *bs = w.base_scale.data<T>();
  f.base_w.resize(static_cast<size_t>(KK * C));
  f.base_b.resize(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    f.base_b[c] = bs[c] * bb[c];
    for (int64_t tap = 0; tap < KK; ++tap) f.base_w[tap * C + c] = bs[c] * bw[c * KK + tap];
  }
  for (int l = 0; l < g.L; ++l) {
    const T *ww = w.wavelet_weight[l].data<T>(), *ws = w.wavelet_scale[l].data<T>();
    std::vector<T> v(static_cast<size_t>(KK * 4 * C));
    for (int64_t c = 0; c < C; ++c)
      for (int s = 0; s < 4; ++s)
        for (int64_t tap = 0; tap < KK; ++tap)
          v[(tap * 4 + s) * C + c] = S::filter(ws[4 * c + s] * ww[(4 * c + s) * KK + tap]);
    f.wave.push_back(std::move(v));
  }
  return f;
}

/// The four pixels (a b / c d) of the 2x2 block at coarse position (p, q) of one (h, w, C) image;
/// pixels in the zero padding (row h or column w of an odd size) point at `zeros`.
template <typename T>
struct Block {
  const T *a, *b, *c, *d;
};
template <typename T>
inline Block<T> block(const T* img, int64_t h, int64_t w, int64_t C, int64_t p, int64_t q,
                      const T* zeros) {
  const int64_t i0 = 2 * p, j0 = 2 * q;
  const bool row1 = i0 + 1 < h, col1 = j0 + 1 < w;
  const T* top = img + (i0 * w + j0) * C;
  const T* bottom = top + w * C;
  return {top, col1 ? top + C : zeros, row1 ? bottom : zeros, row1 && col1 ? bottom + C : zeros};
}

/// Signed, scaled weights of the one-pass synthesis for pixel (i, j) and level l: the level's
/// four sub-bands enter with (1/2)^(l+1) and the signs of the parity bits of (i >> l, j >> l).
template <typename T>
inline void synthesis_factors(int64_t i, int64_t j, int l, T k[4]) {
  const T f = T(1) / T(int64_t(1) << (l + 1));
  const T si = ((i >> l) & 1) ? T(-1) : T(1);  // bottom row of its block: s1 enters negated
  const T sj = ((j >> l) & 1) ? T(-1) : T(1);  // right column: s2 enters negated
  k[0] = f, k[1] = f * si, k[2] = f * sj, k[3] = f * si * sj;
}

/// Workspace tensor (not an activation: it dies with the call).
template <typename T>
Tensor workspace(const Shape& shape, bool zero) {
  memory::CategoryScope scope(Category::workspace);
  return zero ? Tensor::zeros(shape, dtype_of<T>(), Device::cpu)
              : Tensor::empty(shape, dtype_of<T>(), Device::cpu);
}

/// The Haar coefficients of one level, formed once: coef (B, h2, w2, 4, C) = analysis(pad(src))
/// of src (B, h, w, C), h2 = ceil(h / 2), w2 = ceil(w / 2), as S forms and stores them; and, when
/// given, its raw low band ll_next (B, h2, w2, C) (band 0: the next level's input).
template <typename T, typename S>
void coefficient_planes(const T* src, int64_t B, int64_t h, int64_t w, int64_t C, T* coef,
                        T* ll_next) {
  const int64_t h2 = wtconv_level_size(h), w2 = wtconv_level_size(w);
  const std::vector<T> zeros(static_cast<size_t>(C), T(0));
#pragma omp parallel for schedule(static) if (worth_parallel(B * h * w * C))
  for (int64_t row = 0; row < B * h2; ++row) {
    const int64_t b = row / h2, p = row % h2;
    const T* img = src + b * h * w * C;
    for (int64_t q = 0; q < w2; ++q) {
      Block<T> k = block(img, h, w, C, p, q, zeros.data());
      T* out = coef + (row * w2 + q) * 4 * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) {
        T sb[4];
        S::analysis(k.a[c], k.b[c], k.c[c], k.d[c], sb);
        for (int s = 0; s < 4; ++s) out[s * C + c] = sb[s];
      }
      if (ll_next) std::copy(out, out + C, ll_next + (row * w2 + q) * C);
    }
  }
}

/// One level's depthwise conv over its coefficient planes coef (B, h2, w2, 4, C), shared by
/// forward and backward: out (B, h2, w2, 4, C) = sum_taps wf[tap] * coef(p + (ki - r) * dir,
/// q + (kj - r) * dir). dir = +1 is the level conv of x's coefficients (forward: t_l), dir = -1
/// its transpose applied to the coefficients of the level gradient G (backward: e_l). S
/// accumulates and stores out; Bf16Planes takes the taps of the transpose in the order of the
/// flipped filter's rows and columns (ki, kj descending). The coefficients are formed once a level
/// (coefficient_planes), where the paper's first transformation forms them inside the conv at
/// every tap: the same values, K^2 times fewer Haar sums (the CUDA split path also writes them
/// once, docs/fused-wtconv.md section 7).
template <typename T, typename S>
void level_pass(const T* coef, int64_t B, int64_t h2, int64_t w2, int64_t C, int K, const T* wf,
                int dir, T* out_t) {
  const int r = K / 2;
#pragma omp parallel for schedule(static) if (worth_parallel(B * h2 * w2 * 4 * C * K * K))
  for (int64_t row = 0; row < B * h2; ++row) {
    const int64_t b = row / h2, p = row % h2;
    const T* img = coef + b * h2 * w2 * 4 * C;
    for (int64_t q = 0; q < w2; ++q) {
      T* out = out_t + (row * w2 + q) * 4 * C;
      std::fill(out, out + 4 * C, T(0));
      const bool flipped = S::kRounds && dir < 0;
      for (int a = 0; a < K; ++a) {
        const int ki = flipped ? K - 1 - a : a;
        const int64_t pp = p + dir * (ki - r);
        if (pp < 0 || pp >= h2) continue;
        for (int b2 = 0; b2 < K; ++b2) {
          const int kj = flipped ? K - 1 - b2 : b2;
          const int64_t qq = q + dir * (kj - r);
          if (qq < 0 || qq >= w2) continue;
          const T* cf = img + (pp * w2 + qq) * 4 * C;
          const T* wt = wf + (ki * K + kj) * 4 * C;
#pragma omp simd
          for (int64_t e = 0; e < 4 * C; ++e) S::mac(out[e], wt[e], cf[e]);
        }
      }
      if constexpr (S::kRounds)
        for (int64_t e = 0; e < 4 * C; ++e) out[e] = S::store(out[e]);
    }
  }
}

/// One output pixel row set of the final pass, shared by forward (y) and backward (dx):
/// out(i, j) = bias + sum_taps wb[tap] * src(i + (ki - r) * dir, j + (kj - r) * dir)
///           + sum_l synthesis_factors * level[l](i >> (l+1), j >> (l+1)).
/// dir = +1 is the conv (forward), dir = -1 its transpose (backward). Pixels are taken every
/// `stride` in i and j (forward subsampling); out is (B, ceil(H/stride), ceil(W/stride), C).
template <typename T>
void synthesis_pass(const Geometry& g, const T* src, const T* wb, const T* bias, int dir,
                    const std::vector<const T*>& level, T* out) {
  const int64_t C = g.C, Ho = (g.H + g.stride - 1) / g.stride, Wo = (g.W + g.stride - 1) / g.stride;
  const int r = g.K / 2;
  const int64_t work = g.B * Ho * Wo * C * (g.K * g.K + 4 * g.L);
#pragma omp parallel for schedule(static) if (worth_parallel(work))
  for (int64_t row = 0; row < g.B * Ho; ++row) {
    const int64_t b = row / Ho, i = (row % Ho) * g.stride;
    const T* img = src + b * g.H * g.W * C;
    for (int64_t jo = 0; jo < Wo; ++jo) {
      const int64_t j = jo * g.stride;
      T* o = out + (row * Wo + jo) * C;
      if (bias)
        std::copy(bias, bias + C, o);
      else
        std::fill(o, o + C, T(0));
      for (int ki = 0; ki < g.K; ++ki) {
        const int64_t ii = i + dir * (ki - r);
        if (ii < 0 || ii >= g.H) continue;
        for (int kj = 0; kj < g.K; ++kj) {
          const int64_t jj = j + dir * (kj - r);
          if (jj < 0 || jj >= g.W) continue;
          const T* px = img + (ii * g.W + jj) * C;
          const T* wt = wb + (ki * g.K + kj) * C;
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) o[c] += wt[c] * px[c];
        }
      }
      for (int l = 0; l < g.L; ++l) {
        T k[4];
        synthesis_factors(i, j, l, k);
        const int64_t p = i >> (l + 1), q = j >> (l + 1);
        const T* tp = level[l] + ((b * g.h[l + 1] + p) * g.w[l + 1] + q) * 4 * C;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c)
          o[c] += k[0] * tp[c] + k[1] * tp[C + c] + k[2] * tp[2 * C + c] + k[3] * tp[3 * C + c];
      }
    }
  }
}

/// Sums per-chunk partial arrays in chunk order into one (deterministic for any thread count).
inline std::vector<double> reduce_chunks(const std::vector<double>& partial, int64_t chunks,
                                         size_t n) {
  std::vector<double> total(n, 0.0);
  for (int64_t k = 0; k < chunks; ++k)
    for (size_t e = 0; e < n; ++e) total[e] += partial[k * n + e];
  return total;
}

/// Base-path folded gradients: acc[tap*C + c] = sum G(i, j, c) x(i+ki-r, j+kj-r, c) (dL/dw~) and
/// acc[K*K*C + c] = sum G(i, j, c) (dL/db~), in double.
template <typename T>
std::vector<double> base_param_grads(const Geometry& g, const T* x, const T* G) {
  const int64_t C = g.C, KK = int64_t(g.K) * g.K, rows = g.B * g.H;
  const int r = g.K / 2;
  const size_t n = static_cast<size_t>((KK + 1) * C);
  const int64_t chunks = reduction_chunks(rows);
  std::vector<double> partial(static_cast<size_t>(chunks) * n, 0.0);
#pragma omp parallel for schedule(dynamic, 1) if (worth_parallel(rows * g.W * C * KK))
  for (int64_t k = 0; k < chunks; ++k) {
    double* acc = partial.data() + k * n;
    for (int64_t row = rows * k / chunks; row < rows * (k + 1) / chunks; ++row) {
      const int64_t b = row / g.H, i = row % g.H;
      const T* img = x + b * g.H * g.W * C;
      for (int64_t j = 0; j < g.W; ++j) {
        const T* gp = G + (row * g.W + j) * C;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) acc[KK * C + c] += double(gp[c]);
        for (int ki = 0; ki < g.K; ++ki) {
          const int64_t ii = i + ki - r;
          if (ii < 0 || ii >= g.H) continue;
          for (int kj = 0; kj < g.K; ++kj) {
            const int64_t jj = j + kj - r;
            if (jj < 0 || jj >= g.W) continue;
            const T* px = img + (ii * g.W + jj) * C;
            double* a = acc + (ki * g.K + kj) * C;
#pragma omp simd
            for (int64_t c = 0; c < C; ++c) a[c] += double(gp[c]) * double(px[c]);
          }
        }
      }
    }
  }
  return reduce_chunks(partial, chunks, n);
}

/// Level backward, weight part: dL/dw~ [K*K][4][C] = sum dt(p, q, s, c) * coef(p+ki-r, q+kj-r, s,
/// c) in double, from the coefficient planes (B, h2, w2, 4, C) of x's low band (coef) and of the
/// level gradient (dt = analysis(pad(G_l)), coefficient_planes).
template <typename T>
std::vector<double> level_weight_grads(const T* coef, const T* dt, int64_t B, int64_t h2,
                                       int64_t w2, int64_t C, int K) {
  const int64_t rows = B * h2;
  const int r = K / 2;
  const size_t n = static_cast<size_t>(int64_t(K) * K * 4 * C);
  const int64_t chunks = reduction_chunks(rows);
  std::vector<double> partial(static_cast<size_t>(chunks) * n, 0.0);
#pragma omp parallel for schedule(dynamic, 1) if (worth_parallel(B * h2 * w2 * 4 * C * K * K))
  for (int64_t k = 0; k < chunks; ++k) {
    double* acc = partial.data() + k * n;
    for (int64_t row = rows * k / chunks; row < rows * (k + 1) / chunks; ++row) {
      const int64_t b = row / h2, p = row % h2;
      const T* ximg = coef + b * h2 * w2 * 4 * C;
      for (int64_t q = 0; q < w2; ++q) {
        const T* d = dt + (row * w2 + q) * 4 * C;
        for (int ki = 0; ki < K; ++ki) {
          const int64_t pp = p + ki - r;
          if (pp < 0 || pp >= h2) continue;
          for (int kj = 0; kj < K; ++kj) {
            const int64_t qq = q + kj - r;
            if (qq < 0 || qq >= w2) continue;
            const T* xc = ximg + (pp * w2 + qq) * 4 * C;
            double* a = acc + (ki * K + kj) * 4 * C;
#pragma omp simd
            for (int64_t e = 0; e < 4 * C; ++e) a[e] += double(d[e]) * double(xc[e]);
          }
        }
      }
    }
  }
  return reduce_chunks(partial, chunks, n);
}

template <typename T, typename S>
Tensor forward_fused_s(const Tensor& x, const WTConvWeights& weights, const Geometry& g) {
  DenseWeights w(weights);
  Folded<T> f = fold<T, S>(w, g);
  const int64_t C = g.C;
  // Per level: the coefficients c_l and the raw low band ll_{l+1}, then the conv output t_l
  // (B, h[l+1], w[l+1], 4, C).
  std::vector<Tensor> t;
  Tensor ll = x;
  for (int l = 0; l < g.L; ++l) {
    const Shape grid{g.B, g.h[l + 1], g.w[l + 1]};
    const Tensor coef = workspace<T>({grid[0], grid[1], grid[2], 4, C}, false);
    Tensor ll_next;  // the next level's input
    if (l + 1 < g.L) ll_next = workspace<T>({grid[0], grid[1], grid[2], C}, false);
    coefficient_planes<T, S>(ll.data<T>(), g.B, g.h[l], g.w[l], C, coef.data<T>(),
                             ll_next.defined() ? ll_next.data<T>() : nullptr);
    t.push_back(workspace<T>({grid[0], grid[1], grid[2], 4, C}, false));
    level_pass<T, S>(coef.data<T>(), g.B, g.h[l + 1], g.w[l + 1], C, g.K, f.wave[l].data(), +1,
                     t.back().data<T>());
    ll = ll_next;
  }
  std::vector<const T*> levels;
  for (const Tensor& tl : t) levels.push_back(tl.data<T>());
  Tensor y = Tensor::empty({g.B, g.Ho, g.Wo, C}, dtype_of<T>(), Device::cpu);
  synthesis_pass(g, x.data<T>(), f.base_w.data(), f.base_b.data(), +1, levels, y.data<T>());
  return y;
}

template <typename T, typename S>
WTConvGrads backward_fused_s(const Tensor& x, const WTConvWeights& weights, const Tensor& grad_y,
                             const Geometry& g, bool need_grad_x) {
  DenseWeights w(weights);
  Folded<T> f = fold<T, S>(w, g);
  const int64_t C = g.C, KK = int64_t(g.K) * g.K;
  WTConvGrads grads = allocate_param_grads(weights);

  // G_0 = dL/dy on the full grid: grad_y itself, or scattered onto every stride-th pixel.
  Tensor G0 = grad_y;
  if (g.stride > 1) {
    G0 = workspace<T>({g.B, g.H, g.W, C}, true);
    const T* gy = grad_y.data<T>();
    T* dst = G0.data<T>();
    for (int64_t b = 0; b < g.B; ++b)
      for (int64_t io = 0; io < g.Ho; ++io)
        for (int64_t jo = 0; jo < g.Wo; ++jo)
          std::copy_n(gy + ((b * g.Ho + io) * g.Wo + jo) * C, C,
                      dst + ((b * g.H + io * g.stride) * g.W + jo * g.stride) * C);
  }

  // Base path, then unfold: dL/dw = scale dL/dw~, dL/db = scale dL/db~,
  // dL/dscale = sum(dL/dw~ * w) + bias * dL/db~.
  {
    std::vector<double> acc = base_param_grads(g, x.data<T>(), G0.data<T>());
    const T *bw = w.base_weight.data<T>(), *bb = w.base_bias.data<T>(),
            *bs = w.base_scale.data<T>();
    T *gw = grads.base_weight.data<T>(), *gb = grads.base_bias.data<T>();
    T* gs = grads.base_scale.data<T>();
    for (int64_t c = 0; c < C; ++c) {
      const double db = acc[KK * C + c];
      double ds = double(bb[c]) * db;
      for (int64_t tap = 0; tap < KK; ++tap) {
        const double dw = acc[tap * C + c];
        gw[c * KK + tap] = static_cast<T>(double(bs[c]) * dw);
        ds += dw * double(bw[c * KK + tap]);
      }
      gb[c] = static_cast<T>(double(bs[c]) * db);
      gs[c] = static_cast<T>(ds);
    }
  }

  // Levels upwards: x's coefficients c_l (and low band ll_{l+1}); G_l is dL/d(rec_l), dt_l =
  // analysis(pad(G_l)) its coefficients, G_{l+1} = band 0 of dt_l.
  std::vector<Tensor> e;  // per level: transposed conv of dt_l, (B, h[l+1], w[l+1], 4, C)
  Tensor G = G0, ll = x;
  for (int l = 0; l < g.L; ++l) {
    const bool next = l + 1 < g.L;
    const Shape coef_shape{g.B, g.h[l + 1], g.w[l + 1], 4, C}, band{g.B, g.h[l + 1], g.w[l + 1], C};
    const Tensor cx = workspace<T>(coef_shape, false), dt = workspace<T>(coef_shape, false);
    Tensor ll_next, G_next;
    if (next) ll_next = workspace<T>(band, false), G_next = workspace<T>(band, false);
    coefficient_planes<T, S>(ll.data<T>(), g.B, g.h[l], g.w[l], C, cx.data<T>(),
                             next ? ll_next.data<T>() : nullptr);
    coefficient_planes<T, S>(G.data<T>(), g.B, g.h[l], g.w[l], C, dt.data<T>(),
                             next ? G_next.data<T>() : nullptr);
    std::vector<double> acc =
        level_weight_grads<T>(cx.data<T>(), dt.data<T>(), g.B, g.h[l + 1], g.w[l + 1], C, g.K);
    const T *ww = w.wavelet_weight[l].data<T>(), *ws = w.wavelet_scale[l].data<T>();
    T *gw = grads.wavelet_weight[l].data<T>(), *gs = grads.wavelet_scale[l].data<T>();
    for (int64_t c = 0; c < C; ++c)
      for (int s = 0; s < 4; ++s) {
        const int64_t ch = 4 * c + s;
        double ds = 0;
        for (int64_t tap = 0; tap < KK; ++tap) {
          const double dw = acc[(tap * 4 + s) * C + c];
          gw[ch * KK + tap] = static_cast<T>(double(ws[ch]) * dw);
          ds += dw * double(ww[ch * KK + tap]);
        }
        gs[ch] = static_cast<T>(ds);
      }
    if (need_grad_x) {
      e.push_back(workspace<T>(coef_shape, false));
      level_pass<T, S>(dt.data<T>(), g.B, g.h[l + 1], g.w[l + 1], C, g.K, f.wave[l].data(), -1,
                       e.back().data<T>());
    }
    G = G_next;
    ll = ll_next;
  }
  if (!need_grad_x) return grads;

  // dL/dx in one pass: transposed base conv of G_0 plus the one-pass synthesis of every e_l.
  std::vector<const T*> levels;
  for (const Tensor& el : e) levels.push_back(el.data<T>());
  Geometry full = g;
  full.stride = 1;
  grads.x = Tensor::empty(x.shape(), x.dtype(), Device::cpu);
  synthesis_pass(full, G0.data<T>(), f.base_w.data(), static_cast<const T*>(nullptr), -1, levels,
                 grads.x.data<T>());
  return grads;
}

}  // namespace

template <typename T>
Tensor forward_fused(const Tensor& x, const WTConvWeights& w, const Geometry& g, Planes planes) {
  if (planes == Planes::keep) return forward_fused_s<T, KeepPlanes>(x, w, g);
  HG_CHECK((std::is_same_v<T, float>), "wtconv_forward: bf16 planes need the f32 op, got ",
           x.describe());
  if constexpr (std::is_same_v<T, float>) return forward_fused_s<T, Bf16Planes>(x, w, g);
  return Tensor();
}

template <typename T>
WTConvGrads backward_fused(const Tensor& x, const WTConvWeights& w, const Tensor& grad_y,
                           const Geometry& g, bool need_grad_x, Planes planes) {
  if (planes == Planes::keep) return backward_fused_s<T, KeepPlanes>(x, w, grad_y, g, need_grad_x);
  HG_CHECK((std::is_same_v<T, float>), "wtconv_backward: bf16 planes need the f32 op, got ",
           x.describe());
  if constexpr (std::is_same_v<T, float>)
    return backward_fused_s<T, Bf16Planes>(x, w, grad_y, g, need_grad_x);
  return WTConvGrads();
}

#define HG_INSTANTIATE(T)                                                                         \
  template Tensor forward_fused<T>(const Tensor&, const WTConvWeights&, const Geometry&, Planes); \
  template WTConvGrads backward_fused<T>(const Tensor&, const WTConvWeights&, const Tensor&,      \
                                         const Geometry&, bool, Planes);
HG_INSTANTIATE(float)
HG_INSTANTIATE(double)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cpu::wtconv_detail
