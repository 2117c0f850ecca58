// WTConv2d the layer (layers/wtconv.h): parameters, init and state_dict order, the Haar filters
// and checkpoint filters, both modes through the module, errors naming the value, the warning for
// levels on a 1x1 map; and the golden file (f64 and f32). The op's math, gradients, devices and
// dtypes: tests/ops (wtconv_test.cpp, cases_wtconv.cpp).
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/autograd.h"
#include "core/safetensors.h"
#include "golden/golden.h"
#include "layers/wtconv.h"
#include "test_util.h"

using namespace hg;

namespace {

struct Config {
  int64_t B, H, W, C;
  int K, L, stride;
};

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

// ---- the layer --------------------------------------------------------------------------------

TEST(WTConvLayer, ShapesInitAndStateDictOrder) {
  Generator gen(5);
  WTConv2d m(6, 6, {.kernel_size = 5, .wt_levels = 3}, gen);
  std::vector<ParamRef> p = m.named_tensors();
  std::vector<std::string> want{"wt_filter",
                                "iwt_filter",
                                "base_conv.weight",
                                "base_conv.bias",
                                "base_scale.weight",
                                "wavelet_convs.0.weight",
                                "wavelet_convs.1.weight",
                                "wavelet_convs.2.weight",
                                "wavelet_scale.0.weight",
                                "wavelet_scale.1.weight",
                                "wavelet_scale.2.weight"};
  ASSERT_EQ(p.size(), want.size());
  for (size_t k = 0; k < p.size(); ++k) {
    EXPECT_EQ(p[k].name, want[k]);
    const bool filter = want[k].find("filter") != std::string::npos;
    const bool scale = want[k].find("scale") != std::string::npos;
    EXPECT_EQ(p[k].trainable, !filter) << want[k];
    EXPECT_EQ(p[k].no_weight_decay, filter || scale || want[k] == "base_conv.bias") << want[k];
    EXPECT_EQ(p[k].tensor.requires_grad(), !filter) << want[k];
  }
  EXPECT_EQ(m.wt_filter.shape(), (Shape{24, 1, 2, 2}));
  EXPECT_EQ(m.base_weight.shape(), (Shape{6, 1, 5, 5}));
  EXPECT_EQ(m.wavelet_weight[2].shape(), (Shape{24, 1, 5, 5}));
  EXPECT_EQ(m.wavelet_scale[0].shape(), (Shape{1, 24, 1, 1}));
  for (double v : m.base_bias.to_vector<double>()) EXPECT_EQ(v, 0.0);
  for (double v : m.base_scale.to_vector<double>()) EXPECT_EQ(v, 1.0);
  for (const Tensor& s : m.wavelet_scale)
    for (float v : s.to_vector<float>()) EXPECT_EQ(v, 0.1f);
  // trunc normal std 0.02: 150 + 3*600 samples, the sample std lands well within 15%.
  std::vector<double> all = m.base_weight.to_vector<double>();
  for (const Tensor& t : m.wavelet_weight)
    for (double v : t.to_vector<double>()) all.push_back(v);
  double sq = 0, mean = 0;
  for (double v : all) mean += v / all.size();
  for (double v : all) sq += (v - mean) * (v - mean) / all.size();
  EXPECT_NEAR(std::sqrt(sq), 0.02, 0.003);
  EXPECT_NEAR(mean, 0.0, 0.002);

  WTConv2d nb(4, 4, {.kernel_size = 3, .wt_levels = 1, .stride = 2, .bias = false}, gen);
  std::vector<ParamRef> q = nb.named_tensors();
  ASSERT_EQ(q.size(), 7u);
  EXPECT_EQ(q[3].name, "base_scale.weight");  // no base_conv.bias
  EXPECT_EQ(q[6].name, "stride_filter");
  EXPECT_FALSE(q[6].trainable);
}

TEST(WTConvLayer, HaarFiltersFollowTheDoc) {
  // Applying filter s to a block [[a, b], [c, d]] must give the doc's sub-band s.
  Tensor f = haar_filter(2, DType::f64);
  std::vector<double> v = f.to_vector<double>();
  const double a = 0.3, b = -1.7, c = 2.9, d = 0.45;
  const double want[4] = {(a + b + c + d) / 2, (a + b - c - d) / 2, (a - b + c - d) / 2,
                          (a - b - c + d) / 2};
  for (int ch = 0; ch < 2; ++ch)
    for (int s = 0; s < 4; ++s) {
      const double* k = v.data() + (4 * ch + s) * 4;
      EXPECT_DOUBLE_EQ(k[0] * a + k[1] * b + k[2] * c + k[3] * d, want[s]) << "s=" << s;
    }
}

TEST(WTConvLayer, FixedFiltersMatchGoldenCheckpoint) {
  namespace fs = std::filesystem;
  const fs::path path = fs::path(test::golden_dir()) / "wtconvnext_small_golden.safetensors";
  if (!fs::exists(path)) GTEST_SKIP() << "no " << path;
  safetensors::File file = safetensors::load(path.string());
  int checked = 0;
  for (const auto& [key, t] : file.tensors) {
    const std::string suffix = ".wt_filter";
    if (key.size() < suffix.size() ||
        key.compare(key.size() - suffix.size(), suffix.size(), suffix))
      continue;
    const std::string prefix = key.substr(0, key.size() - std::string("wt_filter").size());
    const int64_t C = t.size(0) / 4;
    Generator gen(1);
    WTConv2d m(C, C, {.kernel_size = 5}, gen);
    m.name = prefix;
    EXPECT_NO_THROW(m.load_fixed_filters(t, file.tensors.at(prefix + "iwt_filter"))) << key;
    EXPECT_EQ(t.to_vector<double>(), haar_filter(C, DType::f64).to_vector<double>()) << key;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(WTConvLayer, LoadFixedFiltersRejectsOtherFilters) {
  Generator gen(2);
  WTConv2d m(3, 3, {.kernel_size = 3}, gen);
  m.name = "stages.1.blocks.0.conv_dw";
  Tensor good = haar_filter(3);
  std::vector<float> bad = good.to_vector<float>();
  bad[5] = -bad[5];
  Tensor wrong = Tensor::from_vector<float>(good.shape(), bad);
  try {
    m.load_fixed_filters(good, wrong);
    FAIL() << "no throw";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("stages.1.blocks.0.conv_dw"), std::string::npos) << msg;
    EXPECT_NE(msg.find("iwt_filter"), std::string::npos) << msg;
  }
  EXPECT_THROW(m.load_fixed_filters(haar_filter(4), good), Error);  // wrong channel count
  EXPECT_NO_THROW(m.load_fixed_filters(good, good));
}

TEST(WTConvLayer, ForwardBothModesAgreeAndTrain) {
  Generator gen(3);
  WTConv2d m(4, 4, {.kernel_size = 5, .wt_levels = 2, .dtype = DType::f64}, gen);
  // Random (not init) parameters so every path matters.
  kernels::WTConvWeights r = random_weights({1, 1, 1, 4, 5, 2, 1}, 81);
  m.base_weight.copy_(r.base_weight);
  m.base_bias.copy_(r.base_bias);
  m.base_scale.copy_(r.base_scale);
  for (int l = 0; l < 2; ++l)
    m.wavelet_weight[l].copy_(r.wavelet_weight[l]), m.wavelet_scale[l].copy_(r.wavelet_scale[l]);
  Tensor x = test::random({2, 9, 11, 4}, 82).requires_grad_();
  Tensor gy = test::random({2, 9, 11, 4}, 83);
  EXPECT_EQ(m.mode(), WTConvMode::fused);
  Tensor yf = m.forward(x);
  autograd::backward(yf, gy);
  std::vector<double> gxf = x.grad().to_vector<double>(),
                      gwf = m.wavelet_weight[1].grad().to_vector<double>();
  x.clear_grad();
  m.wavelet_weight[1].clear_grad();
  m.set_mode(WTConvMode::reference);
  EXPECT_EQ(m.mode(), WTConvMode::reference);
  Tensor yr = m.forward(x);
  autograd::backward(yr, gy);
  EXPECT_LT(test::rel_error(yf, yr), 1e-12);
  EXPECT_LT(test::rel_error(Tensor::from_vector(x.shape(), gxf), x.grad()), 1e-12);
  EXPECT_LT(test::rel_error(Tensor::from_vector(m.wavelet_weight[1].shape(), gwf),
                            m.wavelet_weight[1].grad()),
            1e-12);
  EXPECT_EQ(autograd::tape_size(), 0u);
}

TEST(WTConvLayer, NoBiasLayerGradchecks) {
  Generator gen(4);
  WTConv2d m(2, 2, {.kernel_size = 3, .wt_levels = 2, .bias = false, .dtype = DType::f64}, gen);
  EXPECT_FALSE(m.base_bias.defined());
  auto f = [&m](const std::vector<Tensor>& in) {
    kernels::WTConvWeights w{in[1], Tensor(), in[2], {in[3], in[4]}, {in[5], in[6]}};
    return wtconv2d(in[0], w, 1, m.mode());
  };
  std::vector<Tensor> in{test::random({1, 5, 6, 2}, 91).requires_grad_(),
                         m.base_weight,
                         m.base_scale,
                         m.wavelet_weight[0],
                         m.wavelet_weight[1],
                         m.wavelet_scale[0],
                         m.wavelet_scale[1]};
  EXPECT_LT(test::gradcheck(f, in, 1e-2), 1e-7);  // step: see gradcheck_config
}

TEST(WTConvLayer, UserErrorsNameTheValue) {
  Generator gen(6);
  auto make = [&gen](int64_t in, int64_t out, WTConv2dOptions o) { WTConv2d m(in, out, o, gen); };
  std::string m;
  m = error_of([&] { make(4, 4, {.kernel_size = 4}); });
  EXPECT_NE(m.find("kernel_size"), std::string::npos) << m;
  EXPECT_NE(m.find("4"), std::string::npos) << m;
  m = error_of([&] { make(4, 4, {.kernel_size = -3}); });
  EXPECT_NE(m.find("-3"), std::string::npos) << m;
  m = error_of([&] { make(4, 4, {.kernel_size = 0}); });
  EXPECT_NE(m.find("kernel_size"), std::string::npos) << m;
  m = error_of([&] { make(4, 8, {}); });
  EXPECT_NE(m.find("in_channels (4)"), std::string::npos) << m;
  EXPECT_NE(m.find("out_channels (8)"), std::string::npos) << m;
  m = error_of([&] { make(4, 4, {.wt_levels = 0}); });
  EXPECT_NE(m.find("wt_levels"), std::string::npos) << m;
  EXPECT_NE(m.find("0"), std::string::npos) << m;
  m = error_of([&] { make(4, 4, {.wavelet = "db2"}); });
  EXPECT_NE(m.find("'db2'"), std::string::npos) << m;
  EXPECT_EQ(error_of([&] { make(4, 4, {.wavelet = "haar"}); }), "");

  WTConv2d layer(4, 4, {.kernel_size = 3}, gen);
  layer.name = "stages.2.blocks.1.conv_dw";
  m = error_of([&] { layer.forward(test::random({1, 8, 8, 3}, 1, DType::f32)); });
  EXPECT_NE(m.find("stages.2.blocks.1.conv_dw"), std::string::npos) << m;
  EXPECT_NE(m.find("3 channels"), std::string::npos) << m;
  EXPECT_NE(m.find("has 4"), std::string::npos) << m;
  m = error_of([&] { layer.forward(test::random({8, 8, 4}, 1, DType::f32)); });
  EXPECT_NE(m.find("[8, 8, 4]"), std::string::npos) << m;
  // dtype mismatch between x and the parameters reaches the kernel check.
  m = error_of([&] { layer.forward(test::random({1, 8, 8, 4}, 1, DType::f64)); });
  EXPECT_NE(m.find("f32"), std::string::npos) << m;
  EXPECT_NE(m.find("f64"), std::string::npos) << m;
}

TEST(WTConvLayer, DeepLevelsOnTinyInputWarnOnceAndRun) {
  Generator gen(7);
  WTConv2d m(3, 3, {.kernel_size = 5, .wt_levels = 4, .dtype = DType::f64}, gen);
  m.name = "stages.3.blocks.0.conv_dw";
  auto stream = std::make_shared<std::ostringstream>();
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*stream);
  auto saved = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));

  Tensor small = test::random({1, 7, 5, 3}, 11);  // levels: 4x3, 2x2, 1x1, 1x1
  Tensor y = m.forward(small);
  Tensor y2 = m.forward(small);
  m.set_mode(WTConvMode::reference);
  Tensor yr = m.forward(small);
  spdlog::set_default_logger(saved);

  EXPECT_TRUE(m.warned_deep_levels());
  const std::string log = stream->str();
  EXPECT_NE(log.find("stages.3.blocks.0.conv_dw"), std::string::npos) << log;
  EXPECT_NE(log.find("7x5"), std::string::npos) << log;
  EXPECT_NE(log.find("wt_levels=4"), std::string::npos) << log;
  EXPECT_NE(log.find("levels 2..3"), std::string::npos) << log;
  EXPECT_EQ(log.find("wt_levels=4", log.find("wt_levels=4") + 1), std::string::npos)
      << "warned twice: " << log;
  EXPECT_EQ(y.shape(), small.shape());
  EXPECT_LT(test::rel_error(y, yr), 1e-12);

  WTConv2d quiet(3, 3, {.kernel_size = 5, .wt_levels = 2}, gen);
  quiet.forward(test::random({1, 7, 5, 3}, 12, DType::f32));
  EXPECT_FALSE(quiet.warned_deep_levels());
}

// ---- bf16 mixed precision (CPU reference) -------------------------------------------------------
// Contract (layers/wtconv.h): x / grad_y bf16, parameters f32; the op is the f32 op on the widened
// bf16 inputs, with y and grad_x rounded to bf16 (round to nearest even) and f32 parameter
// gradients. The CUDA bf16 kernels are tested against exactly this (tests/gpu/wtconv_test.cpp).

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
// ~2 * 4 * 2^-9 = 1.6e-2 of its largest element, plus the output rounding (2^-9): 2e-2.
// (Measured: forward <= 3.2e-3, gradients <= 9.8e-3 on these cases.)
constexpr double kBf16VsF32Tol = 2e-2;

}  // namespace

TEST(WTConvBf16, CpuForwardIsTheRoundedF32OpOnTheRoundedInput) {
  autograd::NoGradGuard ng;
  uint64_t seed = 3000;
  for (const Config& c : bf16_configs()) {
    for (WTConvMode mode : {WTConvMode::fused, WTConvMode::reference}) {
      SCOPED_TRACE(describe(c) + (mode == WTConvMode::fused ? " fused" : " reference"));
      const kernels::WTConvWeights w = random_weights(c, seed, DType::f32);
      const Tensor x32 = test::random({c.B, c.H, c.W, c.C}, seed + 1, DType::f32);
      const Tensor xb = x32.to(DType::bf16);
      const Tensor y = wtconv2d(xb, w, c.stride, mode);
      ASSERT_EQ(y.dtype(), DType::bf16);
      // exactly: f32 math on the widened input, then round to nearest even
      const Tensor want32 = kernels::cpu::wtconv_forward(xb.to(DType::f32), w, c.stride, mode);
      EXPECT_EQ(bits_of(y), rne_bits(want32.to_vector<float>()));
      // and close to the f32 op on the unrounded input (see kBf16VsF32Tol)
      const double err =
          test::rel_error(y, kernels::cpu::wtconv_forward(x32, w, c.stride, mode));
      EXPECT_LT(err, kBf16VsF32Tol);
      EXPECT_GT(err, 0.0);  // the bf16 path really rounded something
      std::printf("  bf16 vs f32 forward %s %s: rel error %.2e\n", describe(c).c_str(),
                  mode == WTConvMode::fused ? "fused" : "reference", err);
    }
    seed += 10;
  }
}

TEST(WTConvBf16, CpuGradientsThroughAutograd) {
  uint64_t seed = 4000;
  for (const Config& c : bf16_configs()) {
    for (WTConvMode mode : {WTConvMode::fused, WTConvMode::reference}) {
      SCOPED_TRACE(describe(c) + (mode == WTConvMode::fused ? " fused" : " reference"));
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
      // exactly the f32 backward on the widened x and grad_y, grad_x rounded to nearest even
      const kernels::WTConvGrads want = kernels::cpu::wtconv_backward(
          xb.to(DType::f32), w, gyb.to(DType::f32), c.stride, true, mode);
      EXPECT_EQ(bits_of(xb.grad()), rne_bits(want.x.to_vector<float>()));
      std::vector<Tensor> want_p{want.base_weight, want.base_bias, want.base_scale};
      for (int l = 0; l < c.L; ++l) want_p.push_back(want.wavelet_weight[l]);
      for (int l = 0; l < c.L; ++l) want_p.push_back(want.wavelet_scale[l]);
      for (size_t k = 0; k < params.size(); ++k) {
        ASSERT_EQ(params[k].grad().dtype(), DType::f32) << "parameter " << k;
        EXPECT_EQ(params[k].grad().to_vector<float>(), want_p[k].to_vector<float>())
            << "parameter " << k;
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
      std::printf("  bf16 vs f32 gradients %s %s: worst rel error %.2e\n", describe(c).c_str(),
                  mode == WTConvMode::fused ? "fused" : "reference", worst);
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

// ---- golden file --------------------------------------------------------------------------------

TEST(WTConvGolden, MatchesReferenceImplementationF64F32AndBf16) {
  namespace fs = std::filesystem;
  int files = 0;
  for (const auto& entry : fs::directory_iterator(test::golden_dir())) {
    if (entry.path().extension() != ".safetensors") continue;
    safetensors::File f = safetensors::load(entry.path().string());
    if (!test::is_wtconv_cases(f)) continue;
    ++files;
    for (DType dt : {DType::f64, DType::f32, DType::bf16}) {
      std::vector<test::GoldenCheck> checks = test::check_wtconv_cases(f, dt, Device::cpu);
      EXPECT_GT(checks.size(), 0u);
      // Worst error per case and mode, printed for the record.
      std::map<std::string, double> worst;
      for (const test::GoldenCheck& c : checks) {
        EXPECT_TRUE(c.ok()) << c.key << ": " << c.rel_error << " > " << c.tolerance;
        std::string id = c.key.substr(0, c.key.find('.')) + c.key.substr(c.key.find(" ["));
        worst[id] = std::max(worst[id], c.rel_error);
      }
      for (const auto& [id, e] : worst)
        std::printf("  golden %s worst rel error %.3g\n", id.c_str(), e);
    }
  }
  EXPECT_GT(files, 0) << "no WTConv2d cases file in " << test::golden_dir();
}
