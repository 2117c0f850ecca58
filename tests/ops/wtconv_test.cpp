// WTConv2d kernels on the CPU (kernels/wtconv.h): fused == reference in f64 and f32, without grad_x,
// deterministic weight gradients whatever the thread count, stride, the Haar round trip, bad
// weight shapes; and the op with only some inputs requiring a gradient. Finite-difference
// gradients, devices and dtypes: the op harness (cases_wtconv.cpp); the layer:
// tests/layers/wtconv_layer_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/autograd.h"
#include "layers/wtconv.h"
#include "test_util.h"
#include "wtconv_bf16_oracle.h"

using namespace hg;

namespace {

struct Config {
  int64_t B, H, W, C;
  int K, L, stride;
};

std::string describe(const Config& c) {
  return str("B", c.B, " H", c.H, " W", c.W, " C", c.C, " K", c.K, " L", c.L, " stride", c.stride);
}

/// Random weights (never zeros; scales away from 0 so every path carries signal).
kernels::WTConvWeights random_weights(const Config& c, uint64_t seed, DType dtype = DType::f64) {
  kernels::WTConvWeights w;
  const int64_t K = c.K;
  w.base_weight = test::random({c.C, 1, K, K}, seed + 1, dtype);
  w.base_bias = test::random({c.C}, seed + 2, dtype);
  w.base_scale = test::random({1, c.C, 1, 1}, seed + 3, dtype, 0.5, 1.5);
  for (int l = 0; l < c.L; ++l) {
    w.wavelet_weight.push_back(test::random({4 * c.C, 1, K, K}, seed + 10 + l, dtype));
    w.wavelet_scale.push_back(test::random({1, 4 * c.C, 1, 1}, seed + 20 + l, dtype, -1.5, 1.5));
  }
  return w;
}

kernels::WTConvWeights to_dtype(const kernels::WTConvWeights& w, DType dtype) {
  kernels::WTConvWeights o{
      w.base_weight.to(dtype), w.base_bias.to(dtype), w.base_scale.to(dtype), {}, {}};
  for (const Tensor& t : w.wavelet_weight) o.wavelet_weight.push_back(t.to(dtype));
  for (const Tensor& t : w.wavelet_scale) o.wavelet_scale.push_back(t.to(dtype));
  return o;
}

/// Every gradient of a WTConvGrads, x first, as (name, tensor).
std::vector<std::pair<std::string, Tensor>> all_grads(const kernels::WTConvGrads& g) {
  std::vector<std::pair<std::string, Tensor>> v{{"x", g.x},
                                                {"base_weight", g.base_weight},
                                                {"base_bias", g.base_bias},
                                                {"base_scale", g.base_scale}};
  for (size_t l = 0; l < g.wavelet_weight.size(); ++l) {
    v.push_back({str("wavelet_weight[", l, "]"), g.wavelet_weight[l]});
    v.push_back({str("wavelet_scale[", l, "]"), g.wavelet_scale[l]});
  }
  return v;
}

const std::vector<Config>& small_configs() {
  // Odd sizes, every K in {3, 5, 7}, wt_levels 1..5, strides 1..3, thin inputs (H or W = 1).
  static const std::vector<Config> v{
      {1, 5, 7, 2, 3, 1, 1}, {2, 7, 6, 1, 5, 2, 1}, {1, 9, 5, 2, 7, 3, 1}, {1, 6, 7, 1, 3, 4, 1},
      {1, 5, 5, 1, 3, 5, 1}, {1, 7, 5, 2, 3, 2, 2}, {1, 1, 9, 2, 3, 2, 1}, {1, 8, 1, 1, 5, 3, 1},
      {1, 1, 1, 2, 3, 2, 1}, {1, 6, 9, 1, 1, 2, 3}};
  return v;
}

}  // namespace

// ---- the kernels: fused == reference ---------------------------------------------------------

TEST(WTConvKernels, FusedMatchesReferenceF64) {
  std::vector<Config> configs = small_configs();
  configs.push_back({2, 31, 29, 5, 5, 3, 1});
  configs.push_back({2, 20, 24, 4, 3, 4, 2});
  configs.push_back({1, 33, 17, 3, 7, 5, 1});
  uint64_t seed = 100;
  for (const Config& c : configs) {
    SCOPED_TRACE(describe(c));
    kernels::WTConvWeights w = random_weights(c, seed);
    Tensor x = test::random({c.B, c.H, c.W, c.C}, seed + 50);
    Tensor gy = test::random(
        {c.B, (c.H + c.stride - 1) / c.stride, (c.W + c.stride - 1) / c.stride, c.C}, seed + 60);
    seed += 100;
    Tensor yf = kernels::cpu::wtconv_forward(x, w, c.stride, WTConvMode::fused);
    Tensor yr = kernels::cpu::wtconv_forward(x, w, c.stride, WTConvMode::reference);
    EXPECT_EQ(yf.shape(), gy.shape());
    EXPECT_LT(test::rel_error(yf, yr), 1e-12);
    auto gf = all_grads(kernels::cpu::wtconv_backward(x, w, gy, c.stride, true, WTConvMode::fused));
    auto gr =
        all_grads(kernels::cpu::wtconv_backward(x, w, gy, c.stride, true, WTConvMode::reference));
    ASSERT_EQ(gf.size(), gr.size());
    for (size_t k = 0; k < gf.size(); ++k)
      EXPECT_LT(test::rel_error(gf[k].second, gr[k].second), 1e-12) << gf[k].first;
  }
}

TEST(WTConvKernels, FusedF32MatchesReferenceF64) {
  const Config c{2, 19, 23, 6, 5, 3, 1};
  kernels::WTConvWeights w = random_weights(c, 7);
  Tensor x = test::random({c.B, c.H, c.W, c.C}, 8), gy = test::random({c.B, c.H, c.W, c.C}, 9);
  kernels::WTConvWeights w32 = to_dtype(w, DType::f32);
  Tensor y64 = kernels::cpu::wtconv_forward(x, w, 1, WTConvMode::reference);
  for (WTConvMode mode : {WTConvMode::fused, WTConvMode::reference}) {
    Tensor y32 = kernels::cpu::wtconv_forward(x.to(DType::f32), w32, 1, mode);
    EXPECT_EQ(y32.dtype(), DType::f32);
    EXPECT_LT(test::rel_error(y32, y64), 1e-5);
    auto g32 = all_grads(
        kernels::cpu::wtconv_backward(x.to(DType::f32), w32, gy.to(DType::f32), 1, true, mode));
    auto g64 = all_grads(kernels::cpu::wtconv_backward(x, w, gy, 1, true, WTConvMode::reference));
    for (size_t k = 0; k < g32.size(); ++k)
      EXPECT_LT(test::rel_error(g32[k].second, g64[k].second), 1e-5) << g32[k].first;
  }
}

TEST(WTConvKernels, WithoutGradXStillGivesParamGrads) {
  const Config c{1, 9, 7, 2, 3, 2, 1};
  kernels::WTConvWeights w = random_weights(c, 31);
  Tensor x = test::random({1, 9, 7, 2}, 32), gy = test::random({1, 9, 7, 2}, 33);
  for (WTConvMode mode : {WTConvMode::fused, WTConvMode::reference}) {
    auto full = kernels::cpu::wtconv_backward(x, w, gy, 1, true, mode);
    auto part = kernels::cpu::wtconv_backward(x, w, gy, 1, false, mode);
    EXPECT_FALSE(part.x.defined());
    auto a = all_grads(full), b = all_grads(part);
    for (size_t k = 1; k < a.size(); ++k)
      EXPECT_EQ(a[k].second.to_vector<double>(), b[k].second.to_vector<double>()) << a[k].first;
  }
}

TEST(WTConvKernels, FusedWeightGradsAreDeterministic) {
  const Config c{3, 21, 19, 4, 5, 3, 1};
  kernels::WTConvWeights w = random_weights(c, 41, DType::f32);
  Tensor x = test::random({3, 21, 19, 4}, 42, DType::f32);
  Tensor gy = test::random({3, 21, 19, 4}, 43, DType::f32);
  auto a = all_grads(kernels::cpu::wtconv_backward(x, w, gy, 1, true, WTConvMode::fused));
#ifdef _OPENMP
  // Partial sums come from fixed row chunks, so the thread count must not change a bit.
  const int saved = omp_get_max_threads();
  omp_set_num_threads(saved == 1 ? 2 : 1);
#endif
  auto b = all_grads(kernels::cpu::wtconv_backward(x, w, gy, 1, true, WTConvMode::fused));
#ifdef _OPENMP
  omp_set_num_threads(saved);
#endif
  for (size_t k = 0; k < a.size(); ++k)
    EXPECT_EQ(a[k].second.to_vector<float>(), b[k].second.to_vector<float>()) << a[k].first;
}

TEST(WTConvKernels, StrideSubsamplesTheStrideOneOutput) {
  const Config c{1, 11, 8, 3, 5, 2, 1};
  kernels::WTConvWeights w = random_weights(c, 51);
  Tensor x = test::random({1, 11, 8, 3}, 52);
  std::vector<double> full =
      kernels::cpu::wtconv_forward(x, w, 1, WTConvMode::fused).to_vector<double>();
  for (int s : {2, 3}) {
    Tensor y = kernels::cpu::wtconv_forward(x, w, s, WTConvMode::fused);
    const int64_t Ho = (11 + s - 1) / s, Wo = (8 + s - 1) / s;
    ASSERT_EQ(y.shape(), (Shape{1, Ho, Wo, 3}));
    std::vector<double> v = y.to_vector<double>();
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j)
        for (int64_t ch = 0; ch < 3; ++ch)
          EXPECT_DOUBLE_EQ(v[(i * Wo + j) * 3 + ch], full[((i * s) * 8 + j * s) * 3 + ch]);
  }
}

TEST(WTConvKernels, HaarRoundTripWithIdentityConvs) {
  // With 1x1 identity wavelet convs, unit wavelet scales and a zero base path, one level
  // reconstructs x exactly (the Haar transform is orthonormal and its synthesis is its inverse):
  // checks the sign conventions of analysis and synthesis against each other on odd sizes.
  for (int L : {1, 3}) {
    kernels::WTConvWeights w;
    w.base_weight = Tensor::zeros({3, 1, 1, 1}, DType::f64);
    w.base_bias = Tensor::zeros({3}, DType::f64);
    w.base_scale = Tensor::full({1, 3, 1, 1}, 1.0, DType::f64);
    for (int l = 0; l < L; ++l) {
      // Identity on every sub-band, except the LL band of a level that has a deeper level: its
      // low band reaches the synthesis through the deeper level's reconstruction instead.
      std::vector<double> wv(12, 1.0);
      if (l + 1 < L)
        for (int ch = 0; ch < 3; ++ch) wv[4 * ch] = 0.0;
      w.wavelet_weight.push_back(Tensor::from_vector<double>({12, 1, 1, 1}, wv));
      w.wavelet_scale.push_back(Tensor::full({1, 12, 1, 1}, 1.0, DType::f64));
    }
    Tensor x = test::random({2, 7, 5, 3}, 61);
    for (WTConvMode mode : {WTConvMode::fused, WTConvMode::reference})
      EXPECT_LT(test::rel_error(kernels::cpu::wtconv_forward(x, w, 1, mode), x), 1e-14)
          << "L=" << L << " " << (mode == WTConvMode::fused ? "fused" : "reference");
  }
}

// ---- gradients through the autograd op (finite differences: the harness, cases_wtconv.cpp) -----

TEST(WTConvGrad, OnlySomeInputsRequireGrad) {
  const Config c{1, 6, 5, 2, 3, 2, 1};
  kernels::WTConvWeights w = random_weights(c, 71);
  w.wavelet_weight[1].requires_grad_();
  Tensor x = test::random({1, 6, 5, 2}, 72);  // no grad for x
  Tensor gy = test::random({1, 6, 5, 2}, 73);
  Tensor y = wtconv2d(x, w, 1, WTConvMode::fused);
  autograd::backward(y, gy);
  ASSERT_TRUE(w.wavelet_weight[1].grad().defined());
  auto want = kernels::cpu::wtconv_backward(x, w, gy, 1, false, WTConvMode::reference);
  EXPECT_LT(test::rel_error(w.wavelet_weight[1].grad(), want.wavelet_weight[1]), 1e-12);
  EXPECT_FALSE(w.wavelet_weight[0].grad().defined());
}

// ---- the layer --------------------------------------------------------------------------------

namespace {
using test::error_of;
}  // namespace

TEST(WTConvKernels, BadWeightShapesThrow) {
  const Config c{1, 6, 6, 2, 3, 2, 1};
  kernels::WTConvWeights w = random_weights(c, 3);
  Tensor x = test::random({1, 6, 6, 2}, 4);
  kernels::WTConvWeights bad = w;
  bad.wavelet_weight[1] = test::random({8, 1, 5, 5}, 5);
  std::string m = error_of([&] { kernels::cpu::wtconv_forward(x, bad, 1, WTConvMode::fused); });
  EXPECT_NE(m.find("wavelet_weight[1]"), std::string::npos) << m;
  EXPECT_NE(m.find("[8, 1, 3, 3]"), std::string::npos) << m;
  bad = w;
  bad.wavelet_scale.pop_back();
  EXPECT_THROW(kernels::cpu::wtconv_forward(x, bad, 1, WTConvMode::reference), Error);
  EXPECT_THROW(kernels::cpu::wtconv_forward(x, w, 0, WTConvMode::fused), Error);
  m = error_of([&] {
    kernels::cpu::wtconv_backward(x, w, test::random({1, 3, 3, 2}, 6), 1, true, WTConvMode::fused);
  });
  EXPECT_NE(m.find("grad_y"), std::string::npos) << m;
}

// ---- the reference mode's saved intermediates (kernels::WTConvSaved) ---------------------------

TEST(WTConvKernels, ReferenceBackwardFromSavedEqualsRecomputed) {
  // What a reference forward saves is what its backward would recompute: the same gradients bit
  // for bit, in f64, f32 and bf16 (whose intermediates are f32), at stride 1 and 2.
  for (const Config& c : {Config{1, 7, 5, 2, 3, 2, 1}, Config{2, 9, 6, 3, 5, 3, 2}}) {
    for (DType dt : {DType::f64, DType::f32, DType::bf16}) {
      SCOPED_TRACE(describe(c) + " " + dtype_name(dt));
      const DType pdt = dt == DType::bf16 ? DType::f32 : dt;  // parameters and intermediates
      const kernels::WTConvWeights w = random_weights(c, 61, pdt);
      const Tensor x = test::random({c.B, c.H, c.W, c.C}, 62, DType::f64).to(dt);
      const int64_t Ho = (c.H + c.stride - 1) / c.stride, Wo = (c.W + c.stride - 1) / c.stride;
      const Tensor gy = test::random({c.B, Ho, Wo, c.C}, 63, DType::f64).to(dt);
      kernels::WTConvSaved saved;
      const Tensor y1 = kernels::cpu::wtconv_forward(x, w, c.stride, WTConvMode::reference, &saved);
      const Tensor y0 = kernels::cpu::wtconv_forward(x, w, c.stride, WTConvMode::reference);
      EXPECT_EQ(y1.to(DType::f64).to_vector<double>(), y0.to(DType::f64).to_vector<double>());
      // its shapes: base (B, H, W, C), per level three (B, h_{l+1}, w_{l+1}, 4C)
      ASSERT_EQ(saved.coeff.size(), size_t(c.L));
      ASSERT_EQ(saved.synth_in.size(), size_t(c.L));
      EXPECT_EQ(saved.base.shape(), (Shape{c.B, c.H, c.W, c.C}));
      int64_t elems = c.B * c.H * c.W * c.C, h = c.H, wd = c.W;
      for (int l = 0; l < c.L; ++l) {
        h = (h + 1) / 2, wd = (wd + 1) / 2;
        EXPECT_EQ(saved.conv[size_t(l)].shape(), (Shape{c.B, h, wd, 4 * c.C})) << l;
        EXPECT_EQ(saved.synth_in[size_t(l)].dtype(), pdt);
        elems += 3 * c.B * h * wd * 4 * c.C;
      }
      EXPECT_EQ(saved.nbytes(), elems * int64_t(dtype_size(pdt)));
      const auto a =
          all_grads(kernels::cpu::wtconv_backward(x, w, gy, c.stride, true, WTConvMode::reference));
      const auto b = all_grads(
          kernels::cpu::wtconv_backward(x, w, gy, c.stride, true, WTConvMode::reference, &saved));
      for (size_t k = 0; k < a.size(); ++k)
        EXPECT_EQ(a[k].second.to(DType::f64).to_vector<double>(),
                  b[k].second.to(DType::f64).to_vector<double>())
            << a[k].first;
    }
  }
}

TEST(WTConvKernels, SavedIntermediatesAreChecked) {
  const Config c{1, 7, 6, 2, 3, 2, 1};
  const kernels::WTConvWeights w = random_weights(c, 64);
  const Tensor x = test::random({1, 7, 6, 2}, 65), gy = test::random({1, 7, 6, 2}, 66);
  kernels::WTConvSaved saved;
  std::string m =
      error_of([&] { kernels::cpu::wtconv_forward(x, w, 1, WTConvMode::fused, &saved); });
  EXPECT_NE(m.find("reference mode"), std::string::npos) << m;
  m = error_of(
      [&] { kernels::cpu::wtconv_backward(x, w, gy, 1, true, WTConvMode::reference, &saved); });
  EXPECT_NE(m.find("empty"), std::string::npos) << m;
  // saved from another input size: the base's shape is named
  const Tensor x2 = test::random({1, 9, 6, 2}, 67);
  kernels::cpu::wtconv_forward(x2, w, 1, WTConvMode::reference, &saved);
  m = error_of(
      [&] { kernels::cpu::wtconv_backward(x, w, gy, 1, true, WTConvMode::reference, &saved); });
  EXPECT_NE(m.find("saved base"), std::string::npos) << m;
  EXPECT_NE(m.find("[1, 7, 6, 2]"), std::string::npos) << m;
  EXPECT_NE(m.find("[1, 9, 6, 2]"), std::string::npos) << m;
  // saved with fewer levels than the weights
  const Config c1{1, 7, 6, 2, 3, 1, 1};
  kernels::cpu::wtconv_forward(x, random_weights(c1, 68), 1, WTConvMode::reference, &saved);
  m = error_of(
      [&] { kernels::cpu::wtconv_backward(x, w, gy, 1, true, WTConvMode::reference, &saved); });
  EXPECT_NE(m.find("1 tensors (one a level), the weights have 2 levels"), std::string::npos) << m;
}

// ---- bf16 mixed precision (CPU reference) -------------------------------------------------------
// Contract (kernels/wtconv.h): x / grad_y bf16, parameters f32, y and grad_x bf16, parameter
// gradients f32, f32 arithmetic; every stored value rounded once to bf16 (round to nearest even).
// The reference order stores nothing else: it is exactly the f32 op on the widened inputs with y
// and grad_x rounded. The fused op also stores its Haar coefficient planes (of x and of dL/dy,
// hence their LL pyramids), its level outputs and its level gradients in bf16, and its level convs
// use the folded filters rounded to bf16: it must equal wtconv_bf16_oracle.h, an independent
// plain-loop statement of that contract, up to rare one-ulp differences (a value within f32 noise
// of a bf16 rounding boundary, summed in another order), and must differ from "the f32 op, rounded
// once" far more often than that. The CUDA bf16 kernels are tested against the CPU op
// (tests/ops/wtconv_cuda_test.cpp), which rounds the same f32 values they round.

namespace {

/// Element-wise bf16 rounding done here, independently of Tensor::copy_ (round to nearest even).
std::vector<uint16_t> rne_bits(const std::vector<float>& v) {
  std::vector<uint16_t> out;
  for (float f : v) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    out.push_back(uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16));  // inputs are finite
  }
  return out;
}

std::vector<uint16_t> bits_of(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::bf16);
  const Tensor c = t.contiguous();
  const uint16_t* p = reinterpret_cast<const uint16_t*>(c.data<bf16>());
  return std::vector<uint16_t>(p, p + c.numel());
}

/// How two bf16 tensors of one shape differ: the largest difference in bf16 ulps (of the larger
/// magnitude of the pair) and the share of elements that differ at all.
struct Bf16Diff {
  double max_ulps = 0, share = 0;
};
Bf16Diff bf16_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  Bf16Diff d;
  size_t differ = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] == y[i]) continue;
    ++differ;
    const double m = std::max(std::fabs(x[i]), std::fabs(y[i]));
    d.max_ulps = std::max(d.max_ulps, std::fabs(x[i] - y[i]) / std::ldexp(1.0, std::ilogb(m) - 7));
  }
  d.share = x.empty() ? 0 : double(differ) / double(x.size());
  return d;
}

// The fused bf16 op against the oracle: its f32 sums may round a boundary value the other way
// (probability ~ f32 noise / bf16 ulp ~ 2^-14 per stored value), which then moves y or grad_x by
// at most one ulp, in a few elements. Measured on bf16_configs(): no element differs, y or grad_x.
// Intermediates left f32 (or rounded at other points) differ in a large share instead (measured:
// "the f32 op, rounded once" differs from the fused op in 28-58 % of the elements).
constexpr double kRareShare = 0.01;     // the oracle: at most 1 % of the elements differ
constexpr double kRoundedShare = 0.05;  // "the f32 op, rounded": at least 5 % differ
// Parameter gradients: sums of the same products of bf16 values on both sides (the CPU op sums in
// double too; measured: equal), up to the rare flipped value: the f32 layer tolerance.
constexpr double kOracleParamTol = 1e-5;

/// K in {1, 3, 5, 7}, 1..5 levels, odd sizes, strides 1..3, a thin input, C not a power of two.
const std::vector<Config>& bf16_configs() {
  static const std::vector<Config> v{
      {2, 13, 11, 3, 5, 3, 1}, {1, 9, 10, 5, 3, 2, 1}, {1, 12, 15, 2, 7, 4, 1},
      {1, 11, 7, 4, 1, 2, 1},  {1, 17, 19, 3, 5, 5, 1}, {2, 9, 7, 2, 3, 2, 2},
      {1, 10, 11, 3, 7, 3, 3}, {1, 1, 9, 2, 3, 2, 1}};
  return v;
}

// Widening bf16 -> f32 is exact and each input element moves by at most 2^-9 of itself when
// rounded to bf16. y is linear in x with sum |w x| <= ~4 max|y| for these random weights, and the
// gradients are bilinear in (x, grad_y), so rounding the inputs moves every result by at most
// ~2 * 4 * 2^-9 = 1.6e-2 of its largest element, plus the output rounding (2^-9): 2e-2. The
// fused op's intermediate roundings add a few 2^-9 of the level terms, which these cases keep
// within the same bound (measured: forward <= 3.9e-3, gradients <= 1.1e-2; reference order 2.8e-3
// and 9.8e-3).
constexpr double kBf16VsF32Tol = 2e-2;

const char* mode_name(WTConvMode mode) { return mode == WTConvMode::fused ? "fused" : "reference"; }

/// A fused bf16 output (`what`: y or grad_x) against the oracle (up to the rare one-ulp
/// differences of kRareShare) and against the f32 op's result `f32_once` rounded once, which it
/// must differ from in a large share (its intermediates really were rounded); prints both.
void expect_fused_bf16(const Tensor& got, const Tensor& oracle_ref, const Tensor& f32_once,
                       const char* what, const Config& c) {
  const Bf16Diff oracle = bf16_diff(got, oracle_ref);
  const Bf16Diff rounded_once = bf16_diff(got, f32_once.to(DType::bf16));
  EXPECT_LE(oracle.max_ulps, 1.0);
  EXPECT_LE(oracle.share, kRareShare);
  EXPECT_GE(rounded_once.share, kRoundedShare);
  std::printf(
      "  fused bf16 %s %s: vs oracle %.2f ulp, %.2f%% differ; vs the f32 op rounded once %.2f%% "
      "differ\n",
      what, describe(c).c_str(), oracle.max_ulps, 100 * oracle.share, 100 * rounded_once.share);
}

}  // namespace

TEST(WTConvBf16, CpuForwardRoundsWhereTheContractSays) {
  autograd::NoGradGuard ng;
  uint64_t seed = 3000;
  for (const Config& c : bf16_configs()) {
    for (WTConvMode mode : {WTConvMode::fused, WTConvMode::reference}) {
      SCOPED_TRACE(describe(c) + " " + mode_name(mode));
      const kernels::WTConvWeights w = random_weights(c, seed, DType::f32);
      const Tensor x32 = test::random({c.B, c.H, c.W, c.C}, seed + 1, DType::f32);
      const Tensor xb = x32.to(DType::bf16);
      const Tensor y = wtconv2d(xb, w, c.stride, mode);
      ASSERT_EQ(y.dtype(), DType::bf16);
      // the f32 op on the widened input, rounded once to nearest even
      const Tensor once = kernels::cpu::wtconv_forward(xb.to(DType::f32), w, c.stride, mode);
      if (mode == WTConvMode::reference) {
        EXPECT_EQ(bits_of(y), rne_bits(once.to_vector<float>()));  // exactly
      } else {
        expect_fused_bf16(y, test::wtconv_bf16_oracle_forward(xb, w, c.stride), once, "forward", c);
      }
      // and close to the f32 op on the unrounded input (see kBf16VsF32Tol)
      const double err = test::rel_error(y, kernels::cpu::wtconv_forward(x32, w, c.stride, mode));
      EXPECT_LT(err, kBf16VsF32Tol);
      EXPECT_GT(err, 0.0);  // the bf16 path really rounded something
      std::printf("  bf16 vs f32 forward %s %s: rel error %.2e\n", describe(c).c_str(),
                  mode_name(mode), err);
    }
    seed += 10;
  }
}

TEST(WTConvBf16, CpuGradientsThroughAutograd) {
  uint64_t seed = 4000;
  for (const Config& c : bf16_configs()) {
    for (WTConvMode mode : {WTConvMode::fused, WTConvMode::reference}) {
      SCOPED_TRACE(describe(c) + " " + mode_name(mode));
      kernels::WTConvWeights w = random_weights(c, seed, DType::f32);
      const int64_t Ho = (c.H + c.stride - 1) / c.stride, Wo = (c.W + c.stride - 1) / c.stride;
      const Tensor x32 = test::random({c.B, c.H, c.W, c.C}, seed + 1, DType::f32);
      const Tensor gy32 = test::random({c.B, Ho, Wo, c.C}, seed + 2, DType::f32);
      Tensor xb = x32.to(DType::bf16).requires_grad_();
      const Tensor gyb = gy32.to(DType::bf16);
      std::vector<Tensor> params{w.base_weight, w.base_bias, w.base_scale};
      for (int l = 0; l < c.L; ++l) params.push_back(w.wavelet_weight[l]);
      for (int l = 0; l < c.L; ++l) params.push_back(w.wavelet_scale[l]);
      for (Tensor& p : params) p.requires_grad_();

      autograd::backward(wtconv2d(xb, w, c.stride, mode), gyb);
      ASSERT_TRUE(xb.grad().defined());
      ASSERT_EQ(xb.grad().dtype(), DType::bf16);

      autograd::NoGradGuard ng;  // the checks below record nothing
      // reference order: exactly the f32 backward on the widened x and grad_y, grad_x rounded
      // once; fused: the oracle (grad_x up to rare one-ulp differences, parameters at f32
      // tolerance), and grad_x unlike "the f32 backward, rounded once"
      const kernels::WTConvGrads once = kernels::cpu::wtconv_backward(
          xb.to(DType::f32), w, gyb.to(DType::f32), c.stride, true, mode);
      const kernels::WTConvGrads want =
          mode == WTConvMode::reference ? once
                                        : test::wtconv_bf16_oracle_backward(xb, w, gyb, c.stride);
      if (mode == WTConvMode::reference) {
        EXPECT_EQ(bits_of(xb.grad()), rne_bits(once.x.to_vector<float>()));
      } else {
        expect_fused_bf16(xb.grad(), want.x, once.x, "grad_x", c);
      }
      std::vector<Tensor> want_p{want.base_weight, want.base_bias, want.base_scale};
      for (int l = 0; l < c.L; ++l) want_p.push_back(want.wavelet_weight[l]);
      for (int l = 0; l < c.L; ++l) want_p.push_back(want.wavelet_scale[l]);
      double worst_param = 0;
      for (size_t k = 0; k < params.size(); ++k) {
        ASSERT_EQ(params[k].grad().dtype(), DType::f32) << "parameter " << k;
        if (mode == WTConvMode::reference) {
          EXPECT_EQ(params[k].grad().to_vector<float>(), want_p[k].to_vector<float>())
              << "parameter " << k;
        } else {
          const double err = test::rel_error(params[k].grad(), want_p[k]);
          EXPECT_LE(err, kOracleParamTol) << "parameter " << k;
          worst_param = std::max(worst_param, err);
        }
      }

      // close to the f32 backward on the unrounded inputs (see kBf16VsF32Tol)
      const auto g32 =
          all_grads(kernels::cpu::wtconv_backward(x32, w, gy32, c.stride, true, mode));
      std::vector<Tensor> got{xb.grad()};
      for (const Tensor& p : params) got.push_back(p.grad());
      // all_grads order: x, base_weight, base_bias, base_scale, then (weight, scale) per level
      std::vector<Tensor> ordered{got[0], got[1], got[2], got[3]};
      for (int l = 0; l < c.L; ++l) {
        ordered.push_back(got[4 + l]);
        ordered.push_back(got[4 + c.L + l]);
      }
      double worst = 0;
      for (size_t k = 0; k < g32.size(); ++k) {
        const double err = test::rel_error(ordered[k], g32[k].second);
        EXPECT_LT(err, kBf16VsF32Tol) << g32[k].first;
        worst = std::max(worst, err);
      }
      std::printf("  bf16 vs f32 gradients %s %s: worst rel error %.2e (params vs oracle %.2e)\n",
                  describe(c).c_str(), mode_name(mode), worst, worst_param);
    }
    seed += 10;
  }
}

TEST(WTConvBf16, LayerRunsOnBf16WithF32Parameters) {
  Generator gen(12);
  WTConv2d m(6, 6, {.kernel_size = 5, .wt_levels = 3}, gen);
  Tensor x = test::random({2, 15, 13, 6}, 13, DType::f32).to(DType::bf16).requires_grad_();
  Tensor y = m.forward(x);
  EXPECT_EQ(y.dtype(), DType::bf16);
  EXPECT_EQ(y.shape(), x.shape());
  autograd::backward(y, test::random(y.shape(), 14, DType::f32).to(DType::bf16));
  EXPECT_EQ(x.grad().dtype(), DType::bf16);
  EXPECT_EQ(m.base_weight.grad().dtype(), DType::f32);
  EXPECT_EQ(m.wavelet_scale[2].grad().dtype(), DType::f32);
  for (float v : m.wavelet_weight[2].grad().to_vector<float>()) ASSERT_TRUE(std::isfinite(v));
  EXPECT_EQ(autograd::tape_size(), 0u);

  // a bias-free layer: the zero bias the op adds has the parameters' dtype
  WTConv2d nb(3, 3, {.kernel_size = 3, .wt_levels = 2, .bias = false}, gen);
  EXPECT_EQ(nb.forward(test::random({1, 7, 9, 3}, 15, DType::bf16)).dtype(), DType::bf16);
}

TEST(WTConvBf16, MixedDtypeErrorsNameTheTensors) {
  const Config c{1, 6, 6, 2, 3, 2, 1};
  const Tensor xb = test::random({1, 6, 6, 2}, 16, DType::bf16);
  // bf16 x needs f32 parameters
  std::string m = error_of(
      [&] { wtconv2d(xb, random_weights(c, 17, DType::f64), 1, WTConvMode::fused); });
  EXPECT_NE(m.find("base_weight"), std::string::npos) << m;
  EXPECT_NE(m.find("must be f32"), std::string::npos) << m;
  // the CPU kernels check the same themselves (they take bf16 x directly)
  m = error_of([&] {
    kernels::cpu::wtconv_forward(xb, random_weights(c, 17, DType::f64), 1, WTConvMode::fused);
  });
  EXPECT_NE(m.find("base_weight"), std::string::npos) << m;
  EXPECT_NE(m.find("must be f32"), std::string::npos) << m;
  kernels::WTConvWeights w = random_weights(c, 18, DType::f32);
  w.wavelet_scale[1] = w.wavelet_scale[1].to(DType::bf16);
  m = error_of([&] { wtconv2d(xb, w, 1, WTConvMode::reference); });
  EXPECT_NE(m.find("wavelet_scale[1]"), std::string::npos) << m;
  // grad_y must have x's dtype
  m = error_of([&] {
    wtconv2d_run_backward(xb, random_weights(c, 19, DType::f32),
                          test::random({1, 6, 6, 2}, 20, DType::f32), 1, true, WTConvMode::fused);
  });
  EXPECT_NE(m.find("grad_y"), std::string::npos) << m;
  EXPECT_NE(m.find("bf16"), std::string::npos) << m;
}

