// WTConv2d the layer (layers/wtconv.h): parameters, init and state_dict order, the Haar filters
// and checkpoint filters, both modes through the module, errors naming the value, the warning for
// levels on a 1x1 map; and the golden file (f64 and f32). The op's math, gradients, devices and
// dtypes: tests/ops (wtconv_test.cpp, cases_wtconv.cpp).
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "captured_log.h"
#include "core/autograd.h"
#include "core/memory.h"
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

using test::error_of;

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

TEST(WTConvLayer, ReferenceModeKeepsWhatPyTorchsTapeKeeps) {
  // The reference mode holds its intermediates (kernels::WTConvSaved) from the forward to the
  // backward, as the PyTorch reference module's autograd does; the fused mode holds none; neither
  // holds anything in no-grad mode, and the backward frees them.
  Generator gen(5);
  WTConv2d m(4, 4, {.kernel_size = 5, .wt_levels = 2, .dtype = DType::f32}, gen);
  const Tensor x = test::random({2, 9, 11, 4}, 84, DType::f32).requires_grad_();
  const Tensor gy = test::random({2, 9, 11, 4}, 85, DType::f32);
  const int act = static_cast<int>(Category::activations);
  auto live = [&] { return memory::stats(Device::cpu).current[act]; };
  autograd::clear_tape();
  // base (2, 9, 11, 4); per level coeff, conv and synth_in (2, 5, 6, 16) and (2, 3, 3, 16); f32
  const int64_t saved_bytes = 4 * (2 * 9 * 11 * 4 + 3 * (2 * 5 * 6 * 16 + 2 * 3 * 3 * 16));
  auto clear_grads = [&] {
    x.clear_grad();
    for (const Tensor& t : {m.base_weight, m.base_bias, m.base_scale}) t.clear_grad();
    for (const Tensor& t : m.wavelet_weight) t.clear_grad();
    for (const Tensor& t : m.wavelet_scale) t.clear_grad();
  };
  std::map<WTConvMode, int64_t> held, after, no_grad;
  for (WTConvMode mode : {WTConvMode::fused, WTConvMode::reference}) {
    m.set_mode(mode);
    clear_grads();
    int64_t before = live();
    {
      Tensor y = m.forward(x);
      held[mode] = live() - before;
      autograd::backward(y, gy);
    }
    after[mode] = live() - before;
    clear_grads();
    autograd::NoGradGuard guard;
    before = live();
    Tensor y = m.forward(x);
    no_grad[mode] = live() - before;
  }
  EXPECT_EQ(no_grad[WTConvMode::reference], no_grad[WTConvMode::fused]);
  EXPECT_EQ(no_grad[WTConvMode::fused], held[WTConvMode::fused]);  // y alone
  // (each allocation counts whole 256-byte blocks at most: seven tensors)
  EXPECT_GE(held[WTConvMode::reference] - held[WTConvMode::fused], saved_bytes);
  EXPECT_LE(held[WTConvMode::reference] - held[WTConvMode::fused], saved_bytes + 7 * 256);
  EXPECT_EQ(after[WTConvMode::reference], after[WTConvMode::fused]);
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

TEST(WTConvLayer, DeepLevelsOnTinyInputRunQuietly) {
  // Levels past a 1x1 map still compute (fused == reference); the layer itself logs nothing: the
  // model gives one line of advice per model (tests/models/model_config_test.cpp).
  Generator gen(7);
  WTConv2d m(3, 3, {.kernel_size = 5, .wt_levels = 4, .dtype = DType::f64}, gen);
  m.name = "stages.3.blocks.0.conv_dw";
  auto captured = std::make_unique<test::CapturedLog>();

  Tensor small = test::random({1, 7, 5, 3}, 11);  // levels: 4x3, 2x2, 1x1, 1x1
  Tensor y = m.forward(small);
  m.set_mode(WTConvMode::reference);
  Tensor yr = m.forward(small);
  const std::string log = captured->text();
  captured.reset();

  EXPECT_EQ(log, "");
  EXPECT_EQ(y.shape(), small.shape());
  EXPECT_LT(test::rel_error(y, yr), 1e-12);
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
