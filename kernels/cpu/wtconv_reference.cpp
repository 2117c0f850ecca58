// WTConv2d on the CPU in the reference order of docs/wtconv-operator.md: every intermediate (padded
// low bands, coefficients per level, conv outputs, scaled outputs, reconstructions) is a full
// array, and the backward applies the chain rule to each step in reverse, from the intermediates
// a forward saved (WTConvSaved, as the PyTorch reference's autograd keeps them) or recomputed.
// Plain loops on purpose: this is the oracle the fused CPU kernels and the CUDA kernels are tested
// against.
#include <algorithm>

#include "kernels/cpu/wtconv_common.h"

namespace hg::kernels::cpu::wtconv_detail {
namespace {

/// An NHWC array (B, h, w, ch) of T. ch is C for images / low bands, 4C for coefficients
/// (channel 4c + s = sub-band s of channel c, as in the PyTorch reference).
template <typename T>
struct Map {
  int64_t B = 0, h = 0, w = 0, ch = 0;
  std::vector<T> v;
  Map() = default;
  Map(int64_t B_, int64_t h_, int64_t w_, int64_t ch_)
      : B(B_), h(h_), w(w_), ch(ch_), v(static_cast<size_t>(B_ * h_ * w_ * ch_), T(0)) {}
  T& at(int64_t b, int64_t i, int64_t j, int64_t c) { return v[((b * h + i) * w + j) * ch + c]; }
  T at(int64_t b, int64_t i, int64_t j, int64_t c) const {
    return v[((b * h + i) * w + j) * ch + c];
  }
};

template <typename T>
Map<T> from_tensor(const Tensor& t) {
  Map<T> m(t.size(0), t.size(1), t.size(2), t.size(3));
  const Tensor c = t.contiguous();
  const T* p = c.data<T>();
  std::copy(p, p + c.numel(), m.v.begin());
  return m;
}

template <typename T>
Tensor to_tensor(const Map<T>& m) {
  Tensor t = Tensor::empty({m.B, m.h, m.w, m.ch}, dtype_of<T>(), Device::cpu);
  std::copy(m.v.begin(), m.v.end(), t.data<T>());
  return t;
}

/// Zero padding at the bottom / right to even sizes.
template <typename T>
Map<T> pad_even(const Map<T>& in) {
  Map<T> out(in.B, in.h + in.h % 2, in.w + in.w % 2, in.ch);
  for (int64_t b = 0; b < in.B; ++b)
    for (int64_t i = 0; i < in.h; ++i)
      for (int64_t j = 0; j < in.w; ++j)
        for (int64_t c = 0; c < in.ch; ++c) out.at(b, i, j, c) = in.at(b, i, j, c);
  return out;
}

/// The top-left h x w corner (adjoint of zero padding).
template <typename T>
Map<T> crop(const Map<T>& in, int64_t h, int64_t w) {
  Map<T> out(in.B, h, w, in.ch);
  for (int64_t b = 0; b < in.B; ++b)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j)
        for (int64_t c = 0; c < in.ch; ++c) out.at(b, i, j, c) = in.at(b, i, j, c);
  return out;
}

/// Haar analysis of an even-sized (B, 2h, 2w, C) array -> (B, h, w, 4C).
template <typename T>
Map<T> analysis(const Map<T>& in) {
  Map<T> out(in.B, in.h / 2, in.w / 2, 4 * in.ch);
  for (int64_t b = 0; b < in.B; ++b)
    for (int64_t p = 0; p < out.h; ++p)
      for (int64_t q = 0; q < out.w; ++q)
        for (int64_t c = 0; c < in.ch; ++c)
          haar_analysis(in.at(b, 2 * p, 2 * q, c), in.at(b, 2 * p, 2 * q + 1, c),
                        in.at(b, 2 * p + 1, 2 * q, c), in.at(b, 2 * p + 1, 2 * q + 1, c),
                        out.at(b, p, q, 4 * c), out.at(b, p, q, 4 * c + 1),
                        out.at(b, p, q, 4 * c + 2), out.at(b, p, q, 4 * c + 3));
  return out;
}

/// Haar synthesis (the transpose of analysis): (B, h, w, 4C) -> (B, 2h, 2w, C).
template <typename T>
Map<T> synthesis(const Map<T>& in) {
  Map<T> out(in.B, 2 * in.h, 2 * in.w, in.ch / 4);
  const T half = T(0.5);
  for (int64_t b = 0; b < in.B; ++b)
    for (int64_t p = 0; p < in.h; ++p)
      for (int64_t q = 0; q < in.w; ++q)
        for (int64_t c = 0; c < out.ch; ++c) {
          T s0 = in.at(b, p, q, 4 * c), s1 = in.at(b, p, q, 4 * c + 1);
          T s2 = in.at(b, p, q, 4 * c + 2), s3 = in.at(b, p, q, 4 * c + 3);
          out.at(b, 2 * p, 2 * q, c) = half * (s0 + s1 + s2 + s3);
          out.at(b, 2 * p, 2 * q + 1, c) = half * (s0 + s1 - s2 - s3);
          out.at(b, 2 * p + 1, 2 * q, c) = half * (s0 - s1 + s2 - s3);
          out.at(b, 2 * p + 1, 2 * q + 1, c) = half * (s0 - s1 - s2 + s3);
        }
  return out;
}

/// Sub-band s of a coefficient array: (B, h, w, 4C) -> (B, h, w, C).
template <typename T>
Map<T> band(const Map<T>& in, int s) {
  Map<T> out(in.B, in.h, in.w, in.ch / 4);
  for (int64_t b = 0; b < in.B; ++b)
    for (int64_t i = 0; i < in.h; ++i)
      for (int64_t j = 0; j < in.w; ++j)
        for (int64_t c = 0; c < out.ch; ++c) out.at(b, i, j, c) = in.at(b, i, j, 4 * c + s);
  return out;
}

/// in[..., 4c + s] += add[..., c] (the low band of a level receives the coarser reconstruction).
template <typename T>
void add_to_band(Map<T>& in, const Map<T>& add, int s) {
  for (int64_t b = 0; b < in.B; ++b)
    for (int64_t i = 0; i < in.h; ++i)
      for (int64_t j = 0; j < in.w; ++j)
        for (int64_t c = 0; c < add.ch; ++c) in.at(b, i, j, 4 * c + s) += add.at(b, i, j, c);
}

/// Depthwise "same" cross-correlation; weight (ch, 1, K, K) row-major.
template <typename T>
Map<T> dwconv(const Map<T>& in, const T* weight, int K) {
  Map<T> out(in.B, in.h, in.w, in.ch);
  const int r = K / 2;
  for (int64_t b = 0; b < in.B; ++b)
    for (int64_t i = 0; i < in.h; ++i)
      for (int64_t j = 0; j < in.w; ++j)
        for (int64_t c = 0; c < in.ch; ++c) {
          T acc = 0;
          for (int ki = 0; ki < K; ++ki)
            for (int kj = 0; kj < K; ++kj) {
              int64_t ii = i + ki - r, jj = j + kj - r;
              if (ii < 0 || ii >= in.h || jj < 0 || jj >= in.w) continue;
              acc += weight[(c * K + ki) * K + kj] * in.at(b, ii, jj, c);
            }
          out.at(b, i, j, c) = acc;
        }
  return out;
}

/// dL/din of dwconv given dL/dout: the correlation with the flipped kernel.
template <typename T>
Map<T> dwconv_grad_input(const Map<T>& gout, const T* weight, int K) {
  Map<T> gin(gout.B, gout.h, gout.w, gout.ch);
  const int r = K / 2;
  for (int64_t b = 0; b < gout.B; ++b)
    for (int64_t i = 0; i < gout.h; ++i)
      for (int64_t j = 0; j < gout.w; ++j)
        for (int64_t c = 0; c < gout.ch; ++c)
          for (int ki = 0; ki < K; ++ki)
            for (int kj = 0; kj < K; ++kj) {
              int64_t ii = i + ki - r, jj = j + kj - r;
              if (ii < 0 || ii >= gout.h || jj < 0 || jj >= gout.w) continue;
              gin.at(b, ii, jj, c) += weight[(c * K + ki) * K + kj] * gout.at(b, i, j, c);
            }
  return gin;
}

/// dL/dweight of dwconv, (ch, K, K) row-major, accumulated in double.
template <typename T>
std::vector<double> dwconv_grad_weight(const Map<T>& in, const Map<T>& gout, int K) {
  std::vector<double> gw(static_cast<size_t>(in.ch * K * K), 0.0);
  const int r = K / 2;
  for (int64_t b = 0; b < in.B; ++b)
    for (int64_t i = 0; i < in.h; ++i)
      for (int64_t j = 0; j < in.w; ++j)
        for (int64_t c = 0; c < in.ch; ++c)
          for (int ki = 0; ki < K; ++ki)
            for (int kj = 0; kj < K; ++kj) {
              int64_t ii = i + ki - r, jj = j + kj - r;
              if (ii < 0 || ii >= in.h || jj < 0 || jj >= in.w) continue;
              gw[(c * K + ki) * K + kj] +=
                  double(gout.at(b, i, j, c)) * double(in.at(b, ii, jj, c));
            }
  return gw;
}

/// out[..., c] = scale[c] * in[..., c].
template <typename T>
Map<T> scale_channels(const Map<T>& in, const T* scale) {
  Map<T> out = in;
  for (size_t k = 0; k < out.v.size(); ++k) out.v[k] *= scale[k % out.ch];
  return out;
}

/// sum over b, i, j of a[..., c] * b[..., c], per channel, in double.
template <typename T>
std::vector<double> channel_dot(const Map<T>& a, const Map<T>& b) {
  std::vector<double> out(static_cast<size_t>(a.ch), 0.0);
  for (size_t k = 0; k < a.v.size(); ++k) out[k % a.ch] += double(a.v[k]) * double(b.v[k]);
  return out;
}

/// Every intermediate of the reference forward, kept for the backward.
template <typename T>
struct Forward {
  std::vector<Map<T>> ll;     ///< ll[l], l = 0..L: raw low bands (ll[0] = x)
  std::vector<Map<T>> coeff;  ///< coeff[l]: analysis of padded ll[l], (B, h[l+1], w[l+1], 4C)
  std::vector<Map<T>> conv;   ///< conv[l] = dwconv(coeff[l], wavelet_weight[l])
  std::vector<Map<T>> synth_in;  ///< wavelet_scale[l] * conv[l], rec[l + 1] added to band 0
  std::vector<Map<T>> rec;  ///< rec[l]: reconstruction at level l (rec[L] = 0), (B, h[l], w[l], C)
  Map<T> base;              ///< dwconv(x, base_weight) + base_bias
  Map<T> y_full;            ///< base_scale * base + rec[0], before the stride
};

/// What the backward reads of a forward (WTConvSaved's coeff, conv and base; synth_in too, as
/// PyTorch keeps it), as tensors of T.
template <typename T>
void save(const Forward<T>& f, WTConvSaved& saved) {
  saved = WTConvSaved{};
  for (size_t l = 0; l < f.coeff.size(); ++l) {
    saved.coeff.push_back(to_tensor(f.coeff[l]));
    saved.conv.push_back(to_tensor(f.conv[l]));
    saved.synth_in.push_back(to_tensor(f.synth_in[l]));
  }
  saved.base = to_tensor(f.base);
}

/// The parts of a Forward the backward reads (coeff, conv, base), from what a forward saved.
template <typename T>
Forward<T> restore(const WTConvSaved& saved) {
  Forward<T> f;
  for (size_t l = 0; l < saved.coeff.size(); ++l) {
    f.coeff.push_back(from_tensor<T>(saved.coeff[l]));
    f.conv.push_back(from_tensor<T>(saved.conv[l]));
  }
  f.base = from_tensor<T>(saved.base);
  return f;
}

template <typename T>
Forward<T> run_forward(const Map<T>& x, const DenseWeights& w, const Geometry& g) {
  Forward<T> f;
  f.ll.push_back(x);
  for (int l = 0; l < g.L; ++l) {
    f.coeff.push_back(analysis(pad_even(f.ll[l])));
    f.ll.push_back(band(f.coeff[l], 0));  // the RAW low band feeds the next level
    f.conv.push_back(dwconv(f.coeff[l], w.wavelet_weight[l].data<T>(), g.K));
  }
  f.rec.resize(static_cast<size_t>(g.L + 1));
  f.rec[g.L] = Map<T>(g.B, g.h[g.L], g.w[g.L], g.C);
  f.synth_in.resize(static_cast<size_t>(g.L));
  for (int l = g.L - 1; l >= 0; --l) {
    Map<T>& t = f.synth_in[l];
    t = scale_channels(f.conv[l], w.wavelet_scale[l].data<T>());
    add_to_band(t, f.rec[l + 1], 0);
    f.rec[l] = crop(synthesis(t), g.h[l], g.w[l]);
  }
  f.base = dwconv(x, w.base_weight.data<T>(), g.K);
  const T* bias = w.base_bias.data<T>();
  for (size_t k = 0; k < f.base.v.size(); ++k) f.base.v[k] += bias[k % g.C];
  f.y_full = scale_channels(f.base, w.base_scale.data<T>());
  for (size_t k = 0; k < f.y_full.v.size(); ++k) f.y_full.v[k] += f.rec[0].v[k];
  return f;
}

template <typename T>
void write_vector(const std::vector<double>& v, Tensor& t) {
  T* p = t.data<T>();
  for (size_t k = 0; k < v.size(); ++k) p[k] = static_cast<T>(v[k]);
}

}  // namespace

template <typename T>
Tensor forward_reference(const Tensor& x, const WTConvWeights& weights, const Geometry& g,
                         WTConvSaved* saved) {
  DenseWeights w(weights);
  Forward<T> f = run_forward(from_tensor<T>(x), w, g);
  if (saved != nullptr) save(f, *saved);
  Tensor y = Tensor::empty({g.B, g.Ho, g.Wo, g.C}, dtype_of<T>(), Device::cpu);
  T* yp = y.data<T>();
  for (int64_t b = 0; b < g.B; ++b)  // stride: y[:, ::s, ::s]
    for (int64_t io = 0; io < g.Ho; ++io)
      for (int64_t jo = 0; jo < g.Wo; ++jo)
        for (int64_t c = 0; c < g.C; ++c)
          yp[((b * g.Ho + io) * g.Wo + jo) * g.C + c] =
              f.y_full.at(b, io * g.stride, jo * g.stride, c);
  return y;
}

template <typename T>
WTConvGrads backward_reference(const Tensor& x, const WTConvWeights& weights, const Tensor& grad_y,
                               const Geometry& g, bool need_grad_x, const WTConvSaved* saved) {
  DenseWeights w(weights);
  Map<T> xm = from_tensor<T>(x);
  const Forward<T> f = saved != nullptr ? restore<T>(*saved) : run_forward(xm, w, g);
  WTConvGrads grads = allocate_param_grads(weights);
  const int64_t C = g.C;

  // Adjoint of the stride: scatter grad_y back onto the full-resolution grid.
  Map<T> gy_full(g.B, g.H, g.W, C);
  const T* gy = grad_y.data<T>();
  for (int64_t b = 0; b < g.B; ++b)
    for (int64_t io = 0; io < g.Ho; ++io)
      for (int64_t jo = 0; jo < g.Wo; ++jo)
        for (int64_t c = 0; c < C; ++c)
          gy_full.at(b, io * g.stride, jo * g.stride, c) =
              gy[((b * g.Ho + io) * g.Wo + jo) * C + c];

  // Base path: y = base_scale * (dwconv(x) + bias) + rec[0].
  write_vector<T>(channel_dot(gy_full, f.base), grads.base_scale);
  Map<T> g_base = scale_channels(gy_full, w.base_scale.data<T>());
  std::vector<double> g_bias(static_cast<size_t>(C), 0.0);
  for (size_t k = 0; k < g_base.v.size(); ++k) g_bias[k % C] += double(g_base.v[k]);
  write_vector<T>(g_bias, grads.base_bias);
  write_vector<T>(dwconv_grad_weight(xm, g_base, g.K), grads.base_weight);

  // Reconstruction cascade backwards (l = 0 up to L-1): rec[l] = crop(synthesis(t_l + rec[l+1]
  // in band 0)), so d(t_l) = analysis(pad(d rec[l])) and d rec[l+1] = band 0 of it.
  std::vector<Map<T>> g_coeff(static_cast<size_t>(g.L));
  Map<T> g_rec = gy_full;
  for (int l = 0; l < g.L; ++l) {
    Map<T> g_t = analysis(pad_even(g_rec));
    g_rec = band(g_t, 0);
    // t_l = wavelet_scale_l * conv_l, conv_l = dwconv(coeff_l, wavelet_weight_l).
    write_vector<T>(channel_dot(g_t, f.conv[l]), grads.wavelet_scale[l]);
    Map<T> g_conv = scale_channels(g_t, w.wavelet_scale[l].data<T>());
    write_vector<T>(dwconv_grad_weight(f.coeff[l], g_conv, g.K), grads.wavelet_weight[l]);
    if (need_grad_x) g_coeff[l] = dwconv_grad_input(g_conv, w.wavelet_weight[l].data<T>(), g.K);
  }
  if (!need_grad_x) return grads;

  // Analysis cascade backwards (l = L-1 down to 0): coeff_l = analysis(pad(ll_l)) and
  // ll_{l+1} = band 0 of coeff_l, so d ll_l = crop(synthesis(d coeff_l + d ll_{l+1} in band 0)).
  Map<T> g_ll(g.B, g.h[g.L], g.w[g.L], C);
  for (int l = g.L - 1; l >= 0; --l) {
    add_to_band(g_coeff[l], g_ll, 0);
    g_ll = crop(synthesis(g_coeff[l]), g.h[l], g.w[l]);
  }
  Map<T> g_x = dwconv_grad_input(g_base, w.base_weight.data<T>(), g.K);
  grads.x = Tensor::empty(x.shape(), x.dtype(), Device::cpu);
  T* gx = grads.x.data<T>();
  for (size_t k = 0; k < g_x.v.size(); ++k) gx[k] = g_x.v[k] + g_ll.v[k];
  return grads;
}

#define HG_INSTANTIATE(T)                                                                        \
  template Tensor forward_reference<T>(const Tensor&, const WTConvWeights&, const Geometry&,     \
                                       WTConvSaved*);                                            \
  template WTConvGrads backward_reference<T>(const Tensor&, const WTConvWeights&, const Tensor&, \
                                             const Geometry&, bool, const WTConvSaved*);
HG_INSTANTIATE(float)
HG_INSTANTIATE(double)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cpu::wtconv_detail
