// The fused WTConv2d bf16 op as plain loops (see wtconv_bf16_oracle.h).
#include "wtconv_bf16_oracle.h"

#include <array>
#include <cstring>
#include <vector>

#include "core/autograd.h"

namespace hg::test {
namespace {

using kernels::WTConvGrads;
using kernels::WTConvWeights;

/// v as f32, then rounded to bf16 (to nearest, ties to even) on the bits; finite values only.
double rnd(double v) {
  const float f = static_cast<float>(v);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

/// An NHWC stack of images in double; reads outside [0, h) x [0, w) are zero.
struct Img {
  int64_t B = 0, h = 0, w = 0, C = 0;
  std::vector<double> v;
  Img() = default;
  Img(int64_t B_, int64_t h_, int64_t w_, int64_t C_)
      : B(B_), h(h_), w(w_), C(C_), v(size_t(B_ * h_ * w_ * C_), 0.0) {}
  double& at(int64_t b, int64_t i, int64_t j, int64_t c) {
    return v[size_t(((b * h + i) * w + j) * C + c)];
  }
  double get(int64_t b, int64_t i, int64_t j, int64_t c) const {
    return (i < 0 || i >= h || j < 0 || j >= w) ? 0.0 : v[size_t(((b * h + i) * w + j) * C + c)];
  }
};
using Bands = std::array<Img, 4>;

Img from_tensor(const Tensor& t) {
  Img m(t.size(0), t.size(1), t.size(2), t.size(3));
  m.v = t.to_vector<double>();
  return m;
}

Img rounded(Img m) {
  for (double& e : m.v) e = rnd(e);
  return m;
}

// Sub-band s of the 2x2 block (a b / c d): 1/2 * sum_k kSign[s][k] * (a, b, c, d)[k].
constexpr int kSign[4][4] = {{1, 1, 1, 1}, {1, 1, -1, -1}, {1, -1, 1, -1}, {1, -1, -1, 1}};

/// The Haar analysis of m (zero-padded to even size), every coefficient rounded to bf16.
Bands haar(const Img& m) {
  Bands out;
  for (Img& o : out) o = Img(m.B, (m.h + 1) / 2, (m.w + 1) / 2, m.C);
  for (int64_t b = 0; b < m.B; ++b)
    for (int64_t p = 0; p < out[0].h; ++p)
      for (int64_t q = 0; q < out[0].w; ++q)
        for (int64_t c = 0; c < m.C; ++c) {
          const double px[4] = {m.get(b, 2 * p, 2 * q, c), m.get(b, 2 * p, 2 * q + 1, c),
                                m.get(b, 2 * p + 1, 2 * q, c), m.get(b, 2 * p + 1, 2 * q + 1, c)};
          for (int s = 0; s < 4; ++s) {
            double v = 0;
            for (int k = 0; k < 4; ++k) v += kSign[s][k] * px[k];
            out[s].at(b, p, q, c) = rnd(0.5 * v);
          }
        }
  return out;
}

/// The Haar synthesis (the transpose of haar, unrounded), cropped to h x w.
Img ihaar(const Bands& t, int64_t h, int64_t w) {
  Img out(t[0].B, h, w, t[0].C);
  for (int64_t b = 0; b < out.B; ++b)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j)
        for (int64_t c = 0; c < out.C; ++c) {
          const int k = int(i % 2) * 2 + int(j % 2);
          double v = 0;
          for (int s = 0; s < 4; ++s) v += kSign[s][k] * t[s].get(b, i / 2, j / 2, c);
          out.at(b, i, j, c) = 0.5 * v;
        }
  return out;
}

/// Depthwise "same" correlation with f (C, K, K); transpose: its adjoint (offsets negated).
Img conv(const Img& m, const std::vector<double>& f, int K, bool transpose) {
  Img out(m.B, m.h, m.w, m.C);
  const int r = K / 2, sgn = transpose ? -1 : 1;
  for (int64_t b = 0; b < m.B; ++b)
    for (int64_t i = 0; i < m.h; ++i)
      for (int64_t j = 0; j < m.w; ++j)
        for (int64_t c = 0; c < m.C; ++c) {
          double v = 0;
          for (int ki = 0; ki < K; ++ki)
            for (int kj = 0; kj < K; ++kj)
              v += f[size_t((c * K + ki) * K + kj)] *
                   m.get(b, i + sgn * (ki - r), j + sgn * (kj - r), c);
          out.at(b, i, j, c) = v;
        }
  return out;
}

/// sum over (b, p, q) of g(p, q) * m(p + ki - r, q + kj - r), per (c, ki, kj): a (C, K, K) array.
std::vector<double> wgrad(const Img& m, const Img& g, int K) {
  std::vector<double> out(size_t(m.C * K * K), 0.0);
  const int r = K / 2;
  for (int64_t b = 0; b < m.B; ++b)
    for (int64_t p = 0; p < m.h; ++p)
      for (int64_t q = 0; q < m.w; ++q)
        for (int64_t c = 0; c < m.C; ++c)
          for (int ki = 0; ki < K; ++ki)
            for (int kj = 0; kj < K; ++kj)
              out[size_t((c * K + ki) * K + kj)] +=
                  g.get(b, p, q, c) * m.get(b, p + ki - r, q + kj - r, c);
  return out;
}

struct Setup {
  int K = 0, L = 0;
  int64_t C = 0;
  std::vector<double> base_w, base_b;  // bs * bw (C, K, K), bs * bb (C): f32 products
  std::vector<std::array<std::vector<double>, 4>> level_w;  // [l][s]: bf16(ws * ww) (C, K, K)
};

Setup setup(const WTConvWeights& w) {
  Setup st;
  st.K = int(w.base_weight.size(2));
  st.L = w.levels();
  st.C = w.base_weight.size(0);
  const int64_t KK = int64_t(st.K) * st.K;
  const std::vector<float> bw = w.base_weight.to_vector<float>(),
                           bb = w.base_bias.to_vector<float>(),
                           bs = w.base_scale.to_vector<float>();
  for (int64_t c = 0; c < st.C; ++c) {
    st.base_b.push_back(bs[c] * bb[c]);
    for (int64_t k = 0; k < KK; ++k) st.base_w.push_back(bs[c] * bw[c * KK + k]);
  }
  for (int l = 0; l < st.L; ++l) {
    const std::vector<float> ww = w.wavelet_weight[l].to_vector<float>(),
                             ws = w.wavelet_scale[l].to_vector<float>();
    std::array<std::vector<double>, 4> f;
    for (int s = 0; s < 4; ++s)
      for (int64_t c = 0; c < st.C; ++c)
        for (int64_t k = 0; k < KK; ++k) {
          const float prod = ws[4 * c + s] * ww[(4 * c + s) * KK + k];  // the f32 product
          f[s].push_back(rnd(prod));
        }
    st.level_w.push_back(f);
  }
  return st;
}

/// The reconstruction of the reference order: rec = crop(H^T(t_l + rec on the LL band)), l down
/// to 0; dims[l] = (h_l, w_l).
Img reconstruct(std::vector<Bands> t, const std::vector<std::pair<int64_t, int64_t>>& dims) {
  Img rec;
  for (int l = int(t.size()) - 1; l >= 0; --l) {
    if (l + 1 < int(t.size()))
      for (size_t e = 0; e < rec.v.size(); ++e) t[l][0].v[e] += rec.v[e];
    rec = ihaar(t[l], dims[l].first, dims[l].second);
  }
  return rec;
}

Tensor bf16_tensor(const Img& m) {
  return Tensor::from_vector({m.B, m.h, m.w, m.C}, rounded(m).v).to(DType::bf16);
}

}  // namespace

Tensor wtconv_bf16_oracle_forward(const Tensor& x, const WTConvWeights& w, int stride) {
  autograd::NoGradGuard ng;
  const Setup st = setup(w);
  const Img X = from_tensor(x);
  std::vector<Bands> t;
  std::vector<std::pair<int64_t, int64_t>> dims;
  Img ll = X;
  for (int l = 0; l < st.L; ++l) {
    dims.push_back({ll.h, ll.w});
    const Bands c = haar(ll);
    Bands tl;
    for (int s = 0; s < 4; ++s) tl[s] = rounded(conv(c[s], st.level_w[l][s], st.K, false));
    t.push_back(tl);
    ll = c[0];
  }
  const Img rec = reconstruct(t, dims);
  const Img base = conv(X, st.base_w, st.K, false);
  Img y(X.B, (X.h + stride - 1) / stride, (X.w + stride - 1) / stride, X.C);
  for (int64_t b = 0; b < y.B; ++b)
    for (int64_t i = 0; i < y.h; ++i)
      for (int64_t j = 0; j < y.w; ++j)
        for (int64_t c = 0; c < y.C; ++c)
          y.at(b, i, j, c) = base.get(b, i * stride, j * stride, c) + st.base_b[size_t(c)] +
                             rec.get(b, i * stride, j * stride, c);
  return bf16_tensor(y);
}

WTConvGrads wtconv_bf16_oracle_backward(const Tensor& x, const WTConvWeights& w,
                                        const Tensor& grad_y, int stride) {
  autograd::NoGradGuard ng;
  const Setup st = setup(w);
  const Img X = from_tensor(x), gy = from_tensor(grad_y);
  const int64_t C = st.C, KK = int64_t(st.K) * st.K;
  Img G0(X.B, X.h, X.w, C);  // dL/dy on the full grid (zeros between the stride's samples)
  for (int64_t b = 0; b < gy.B; ++b)
    for (int64_t i = 0; i < gy.h; ++i)
      for (int64_t j = 0; j < gy.w; ++j)
        for (int64_t c = 0; c < C; ++c) G0.at(b, i * stride, j * stride, c) = gy.get(b, i, j, c);

  WTConvGrads g;
  std::vector<Bands> gt;
  std::vector<std::pair<int64_t, int64_t>> dims;
  Img gR = G0, ll = X;
  for (int l = 0; l < st.L; ++l) {
    dims.push_back({ll.h, ll.w});
    const Bands gc = haar(gR), xc = haar(ll);  // dL/dt_l and c_l, both rounded
    Bands gtl;
    std::vector<double> gww(size_t(4 * C * KK)), gws(size_t(4 * C));
    const std::vector<float> ww = w.wavelet_weight[l].to_vector<float>(),
                             ws = w.wavelet_scale[l].to_vector<float>();
    for (int s = 0; s < 4; ++s) {
      gtl[s] = rounded(conv(gc[s], st.level_w[l][s], st.K, true));
      const std::vector<double> dw = wgrad(xc[s], gc[s], st.K);  // dL/d(folded filter)
      for (int64_t c = 0; c < C; ++c) {
        const int64_t e = 4 * c + s;  // PyTorch's channel of sub-band s of c
        for (int64_t k = 0; k < KK; ++k) {
          gww[size_t(e * KK + k)] = ws[e] * dw[size_t(c * KK + k)];
          gws[size_t(e)] += dw[size_t(c * KK + k)] * ww[e * KK + k];
        }
      }
    }
    g.wavelet_weight.push_back(
        Tensor::from_vector(w.wavelet_weight[l].shape(), gww).to(DType::f32));
    g.wavelet_scale.push_back(Tensor::from_vector(w.wavelet_scale[l].shape(), gws).to(DType::f32));
    gt.push_back(gtl);
    gR = gc[0];
    ll = xc[0];
  }

  // base path: dL/d(bs bw) = wgrad(x, G0), dL/d(bs bb) = sum G0, then unfolded
  const std::vector<double> dbw = wgrad(X, G0, st.K);
  const std::vector<float> bw = w.base_weight.to_vector<float>(),
                           bb = w.base_bias.to_vector<float>(),
                           bs = w.base_scale.to_vector<float>();
  std::vector<double> gbw(static_cast<size_t>(C * KK)), gbb(static_cast<size_t>(C)),
      gbs(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    double db = 0;
    for (size_t e = size_t(c); e < G0.v.size(); e += size_t(C)) db += G0.v[e];
    gbb[size_t(c)] = bs[c] * db;
    gbs[size_t(c)] = db * bb[c];
    for (int64_t k = 0; k < KK; ++k) {
      gbw[size_t(c * KK + k)] = bs[c] * dbw[size_t(c * KK + k)];
      gbs[size_t(c)] += dbw[size_t(c * KK + k)] * bw[c * KK + k];
    }
  }
  g.base_weight = Tensor::from_vector(w.base_weight.shape(), gbw).to(DType::f32);
  g.base_bias = Tensor::from_vector(w.base_bias.shape(), gbb).to(DType::f32);
  g.base_scale = Tensor::from_vector(w.base_scale.shape(), gbs).to(DType::f32);

  // grad_x: the transposed base conv of G0 plus the reconstruction of the level gradients
  const Img rec = reconstruct(gt, dims);
  Img gx = conv(G0, st.base_w, st.K, true);
  for (size_t e = 0; e < gx.v.size(); ++e) gx.v[e] += rec.v[e];
  g.x = bf16_tensor(gx);
  return g;
}

}  // namespace hg::test
