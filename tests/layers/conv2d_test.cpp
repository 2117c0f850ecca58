// conv2d / Conv2d: layout conventions against an independent NCHW loop, float64 finite-difference
// gradients for every configuration ConvNeXt uses (and the odd ones), fast paths against the
// reference loops, determinism, errors, and the module's parameters and init.
#include "kernels/conv2d.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/autograd.h"
#include "layers/conv2d.h"
#include "test_util.h"

using namespace hg;

namespace {

Tensor param(const Shape& s, uint64_t seed) { return test::random(s, seed).requires_grad_(); }

struct Cfg {
  const char* name;
  int64_t N, H, W, C, O, K;
  int stride, pad, groups;
  bool bias;
};

// Every path of the CPU kernels: dense (im2col), pointwise, patchify, depthwise, grouped; odd
// sizes, stride 2 with and without padding, no bias, a patchify conv whose input is not a multiple
// of k.
const Cfg kConfigs[] = {
    {"dense3x3_pad1", 2, 5, 4, 3, 4, 3, 1, 1, 1, true},
    {"dense3x3_stride2_pad1_odd", 2, 5, 6, 2, 3, 3, 2, 1, 1, true},
    {"dense3x3_nobias", 1, 4, 5, 3, 2, 3, 1, 1, 1, false},
    {"pointwise1x1", 2, 3, 4, 5, 3, 1, 1, 0, 1, true},
    {"patchify4x4_in1", 2, 8, 8, 1, 5, 4, 4, 0, 1, true},
    {"downsample2x2", 2, 4, 6, 3, 6, 2, 2, 0, 1, true},
    {"patchify2x2_remainder", 1, 5, 7, 2, 3, 2, 2, 0, 1, true},
    {"groups2", 2, 4, 4, 4, 6, 3, 1, 1, 2, true},
    {"depthwise3x3", 2, 5, 4, 3, 3, 3, 1, 1, 3, true},
    {"depthwise7x7_pad3", 1, 6, 5, 2, 2, 7, 1, 3, 2, true},
    {"depthwise5x5_stride2_nobias", 2, 7, 6, 3, 3, 5, 2, 2, 3, false},
};

Tensor weight_for(const Cfg& c, uint64_t seed, DType dt = DType::f64) {
  return test::random({c.O, c.C / c.groups, c.K, c.K}, seed, dt);
}

}  // namespace

// The NHWC result, read back in NCHW, equals conv2d written directly on NCHW data with the PyTorch
// weight layout (an oracle that shares no code or index helpers with the kernels).
TEST(Conv2d, MatchesIndependentNchwLoops) {
  for (const Cfg& c : kConfigs) {
    Tensor x = test::random({c.N, c.H, c.W, c.C}, 1), w = weight_for(c, 2),
           b = test::random({c.O}, 3);
    Tensor y = conv2d(x, w, c.bias ? b : Tensor(), c.stride, c.pad, c.groups);
    const int64_t OH = (c.H + 2 * c.pad - c.K) / c.stride + 1,
                  OW = (c.W + 2 * c.pad - c.K) / c.stride + 1;
    ASSERT_EQ(y.shape(), (Shape{c.N, OH, OW, c.O})) << c.name;
    std::vector<double> xn = x.permute({0, 3, 1, 2}).contiguous().to_vector<double>();  // NCHW
    std::vector<double> yn = y.permute({0, 3, 1, 2}).contiguous().to_vector<double>();
    std::vector<double> wv = w.to_vector<double>(), bv = b.to_vector<double>();
    const int64_t Cg = c.C / c.groups, Og = c.O / c.groups;
    double worst = 0;
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t o = 0; o < c.O; ++o)
        for (int64_t i = 0; i < OH; ++i)
          for (int64_t j = 0; j < OW; ++j) {
            double acc = c.bias ? bv[o] : 0.0;
            for (int64_t ci = 0; ci < Cg; ++ci)
              for (int64_t a = 0; a < c.K; ++a)
                for (int64_t bb = 0; bb < c.K; ++bb) {
                  int64_t h = i * c.stride - c.pad + a, ww = j * c.stride - c.pad + bb;
                  if (h < 0 || h >= c.H || ww < 0 || ww >= c.W) continue;
                  int64_t cin = (o / Og) * Cg + ci;
                  acc += xn[((n * c.C + cin) * c.H + h) * c.W + ww] *
                         wv[((o * Cg + ci) * c.K + a) * c.K + bb];
                }
            worst = std::max(worst, std::fabs(acc - yn[((n * c.O + o) * OH + i) * OW + j]));
          }
    EXPECT_LT(worst, 1e-12) << c.name;
  }
}

TEST(Conv2d, GradcheckFloat64AllConfigs) {
  for (const Cfg& c : kConfigs) {
    const Cfg cc = c;
    std::vector<Tensor> in = {param({c.N, c.H, c.W, c.C}, 10), weight_for(c, 11).requires_grad_()};
    if (c.bias) in.push_back(param({c.O}, 12));
    auto f = [cc](const std::vector<Tensor>& v) {
      return conv2d(v[0], v[1], cc.bias ? v[2] : Tensor(), cc.stride, cc.pad, cc.groups);
    };
    EXPECT_LT(test::gradcheck(f, in), 1e-8) << c.name;
  }
}

// Fast paths (im2col + GEMM, depthwise loops) against the reference loops, in f64 and f32, on
// sizes a bit larger than the gradchecks (and ConvNeXt's stem / downsample / 7x7 depthwise).
template <typename T>
void check_fast_vs_reference(const kernels::Conv2dShape& s, double tol, const std::string& name) {
  const DType dt = dtype_of<T>();
  Tensor x = test::random({s.N, s.H, s.W, s.C}, 21, dt),
         w = test::random({s.O, s.Cg(), s.KH, s.KW}, 22, dt);
  Tensor b = test::random({s.O}, 23, dt), gy = test::random({s.N, s.OH, s.OW, s.O}, 24, dt);
  Tensor y0 = Tensor::empty(gy.shape(), dt), y1 = Tensor::full(gy.shape(), NAN, dt);
  Tensor gx0 = Tensor::empty(x.shape(), dt), gx1 = Tensor::full(x.shape(), NAN, dt);
  Tensor gw0 = Tensor::empty(w.shape(), dt), gw1 = Tensor::full(w.shape(), NAN, dt);
  kernels::cpu::conv2d_forward_reference<T>(s, x.data<T>(), w.data<T>(), b.data<T>(), y0.data<T>());
  kernels::cpu::conv2d_forward<T>(s, x.data<T>(), w.data<T>(), b.data<T>(), y1.data<T>());
  kernels::cpu::conv2d_backward_data_reference<T>(s, gy.data<T>(), w.data<T>(), gx0.data<T>());
  kernels::cpu::conv2d_backward_data<T>(s, gy.data<T>(), w.data<T>(), gx1.data<T>());
  kernels::cpu::conv2d_backward_weight_reference<T>(s, x.data<T>(), gy.data<T>(), gw0.data<T>());
  kernels::cpu::conv2d_backward_weight<T>(s, x.data<T>(), gy.data<T>(), gw1.data<T>());
  EXPECT_LT(test::rel_error(y1, y0), tol) << name << " forward";
  EXPECT_LT(test::rel_error(gx1, gx0), tol) << name << " grad_x";
  EXPECT_LT(test::rel_error(gw1, gw0), tol) << name << " grad_weight";
  // Without bias the forward must not read the bias pointer.
  Tensor y2 = Tensor::full(gy.shape(), NAN, dt), y3 = Tensor::empty(gy.shape(), dt);
  kernels::cpu::conv2d_forward<T>(s, x.data<T>(), w.data<T>(), nullptr, y2.data<T>());
  kernels::cpu::conv2d_forward_reference<T>(s, x.data<T>(), w.data<T>(), nullptr, y3.data<T>());
  EXPECT_LT(test::rel_error(y2, y3), tol) << name << " forward, no bias";
}

TEST(Conv2d, FastPathsMatchReference) {
  using kernels::make_conv2d_shape;
  const std::pair<const char*, kernels::Conv2dShape> shapes[] = {
      {"stem4x4_in1", make_conv2d_shape(3, 28, 28, 1, 16, 4, 4, 4, 0, 1)},
      {"stem4x4_in3_remainder", make_conv2d_shape(2, 18, 17, 3, 8, 4, 4, 4, 0, 1)},
      {"downsample2x2", make_conv2d_shape(2, 7, 7, 16, 32, 2, 2, 2, 0, 1)},
      {"dense3x3_pad1_stride2", make_conv2d_shape(2, 9, 8, 5, 7, 3, 3, 2, 1, 1)},
      {"pointwise", make_conv2d_shape(2, 5, 5, 8, 6, 1, 1, 1, 0, 1)},
      {"pointwise_stride2", make_conv2d_shape(2, 5, 5, 8, 6, 1, 1, 2, 0, 1)},
      {"dw7x7_pad3", make_conv2d_shape(2, 14, 13, 24, 24, 7, 7, 1, 3, 24)},
      {"dw5x5_pad2_stride2", make_conv2d_shape(2, 11, 12, 9, 9, 5, 5, 2, 2, 9)},
      {"dw3x3_nopad", make_conv2d_shape(1, 6, 7, 5, 5, 3, 3, 1, 0, 5)},
      {"groups3", make_conv2d_shape(2, 6, 5, 6, 9, 3, 3, 1, 1, 3)},
  };
  for (const auto& [name, s] : shapes) {
    check_fast_vs_reference<double>(s, 1e-12, name);
    check_fast_vs_reference<float>(s, 1e-5, name);
  }
}

TEST(Conv2d, BiasGradientIsSumOverPixels) {
  const auto s = kernels::make_conv2d_shape(2, 5, 4, 3, 4, 3, 3, 1, 1, 1);
  Tensor gy = test::random({s.N, s.OH, s.OW, s.O}, 31);
  Tensor gb = Tensor::full({s.O}, NAN, DType::f64);
  kernels::cpu::conv2d_backward_bias<double>(s, gy.data<double>(), gb.data<double>());
  std::vector<double> g = gy.to_vector<double>(), got = gb.to_vector<double>();
  for (int64_t o = 0; o < s.O; ++o) {
    double acc = 0;
    for (int64_t m = 0; m < s.N * s.OH * s.OW; ++m) acc += g[static_cast<size_t>(m * s.O + o)];
    EXPECT_NEAR(got[static_cast<size_t>(o)], acc, 1e-12);
  }
}

// Weight gradients are bit-identical run to run (OpenMP splits work, never a sum).
TEST(Conv2d, WeightGradientsAreDeterministic) {
  for (auto s : {kernels::make_conv2d_shape(4, 14, 14, 32, 32, 7, 7, 1, 3, 32),
                 kernels::make_conv2d_shape(4, 14, 14, 16, 32, 2, 2, 2, 0, 1)}) {
    Tensor x = test::random({s.N, s.H, s.W, s.C}, 41, DType::f32);
    Tensor gy = test::random({s.N, s.OH, s.OW, s.O}, 42, DType::f32);
    Tensor a = Tensor::empty({s.O, s.Cg(), s.KH, s.KW}),
           b = Tensor::empty({s.O, s.Cg(), s.KH, s.KW});
    kernels::cpu::conv2d_backward_weight<float>(s, x.data<float>(), gy.data<float>(),
                                                a.data<float>());
    kernels::cpu::conv2d_backward_weight<float>(s, x.data<float>(), gy.data<float>(),
                                                b.data<float>());
    EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  }
}

// Gradients flow only to what requires grad; a frozen weight still gives the input its gradient.
TEST(Conv2d, GradientOnlyWhereRequired) {
  Tensor x = param({1, 4, 4, 2}, 51), w = test::random({3, 2, 3, 3}, 52);
  auto f = [w](const std::vector<Tensor>& v) { return conv2d(v[0], w, Tensor(), 1, 1, 1); };
  EXPECT_LT(test::gradcheck(f, {x}), 1e-8);
  EXPECT_FALSE(w.grad().defined());
}

namespace {
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    const std::string m = e.what();
    for (const auto& p : parts)
      EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' not in: " << m;
  }
}
}  // namespace

TEST(Conv2d, BadInputsThrowNamingOpAndShapes) {
  Tensor x = test::random({2, 5, 5, 4}, 1), w = test::random({6, 4, 3, 3}, 2),
         b = test::random({6}, 3);
  expect_error([&] { conv2d(test::random({5, 5, 4}, 1), w, b); }, {"conv2d", "[5, 5, 4]"});
  expect_error(
      [&] {
        conv2d(x, test::random({6, 3, 3, 3}, 2), b);
      },
      {"conv2d", "[6, 3, 3, 3]", "[2, 5, 5, 4]"});
  expect_error([&] { conv2d(x, w, test::random({5}, 3)); }, {"conv2d", "bias", "[5]"});
  expect_error(
      [&] {
        conv2d(x, test::random({6, 2, 3, 3}, 2), b, 1, 1, 3);
      },
      {"conv2d", "groups 3"});
  expect_error([&] { conv2d(x, w, b, 0); }, {"conv2d", "stride 0"});
  expect_error([&] { conv2d(x, w, b, 1, -1); }, {"conv2d", "padding -1"});
  expect_error([&] { conv2d(x, test::random({6, 4, 7, 7}, 2), b); }, {"conv2d", "[6, 4, 7, 7]"});
  expect_error([&] { conv2d(x.to(DType::f32), w, b); }, {"conv2d"});
  expect_error([&] { conv2d(x, w, b.to(DType::f32)); }, {"conv2d"});
}

TEST(Conv2d, ModuleParametersInitAndForward) {
  Generator gen(7);
  Conv2d dw({.in_channels = 64, .out_channels = 64, .kernel_size = 7, .padding = 3, .groups = 64},
            gen, DType::f64);
  auto named = dw.named_tensors();
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].name, "weight");
  EXPECT_EQ(named[0].tensor.shape(), (Shape{64, 1, 7, 7}));
  EXPECT_FALSE(named[0].no_weight_decay);
  EXPECT_EQ(named[1].name, "bias");
  EXPECT_TRUE(named[1].no_weight_decay);
  EXPECT_TRUE(dw.weight.requires_grad() && dw.bias.requires_grad());
  for (double v : dw.bias.to_vector<double>()) EXPECT_EQ(v, 0.0);
  // trunc_normal(std 0.02): the sample std of 3136 values is within 10% of 0.02, mean near 0.
  std::vector<double> wv = dw.weight.to_vector<double>();
  double mean = 0, sq = 0;
  for (double v : wv) mean += v;
  mean /= wv.size();
  for (double v : wv) sq += (v - mean) * (v - mean);
  EXPECT_NEAR(std::sqrt(sq / wv.size()), 0.02, 0.002);
  EXPECT_NEAR(mean, 0.0, 0.002);

  Conv2d stem({.in_channels = 1, .out_channels = 8, .kernel_size = 4, .stride = 4, .bias = false},
              gen, DType::f64);
  EXPECT_EQ(stem.named_tensors().size(), 1u);
  EXPECT_FALSE(stem.bias.defined());
  Tensor y = stem.forward(test::random({2, 28, 28, 1}, 5));
  EXPECT_EQ(y.shape(), (Shape{2, 7, 7, 8}));
  EXPECT_THROW(Conv2d({.in_channels = 6, .out_channels = 4, .kernel_size = 3, .groups = 4}, gen),
               Error);

  std::vector<ParamRef> prefixed;
  dw.collect("stages.0.blocks.1.conv_dw.", prefixed);
  EXPECT_EQ(prefixed[1].name, "stages.0.blocks.1.conv_dw.bias");
}
