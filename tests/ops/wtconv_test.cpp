// WTConv2d kernels on the CPU (kernels/wtconv.h): fused == reference in f64 and f32, without grad_x,
// deterministic weight gradients whatever the thread count, stride, the Haar round trip, bad
// weight shapes; and the op with only some inputs requiring a gradient. Finite-difference
// gradients, devices and dtypes: the op harness (cases_wtconv.cpp); the layer:
// tests/layers/wtconv_layer_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/autograd.h"
#include "layers/wtconv.h"
#include "test_util.h"

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
/// Runs `f` and returns the hg::Error message it throws ("" when it does not throw).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
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
