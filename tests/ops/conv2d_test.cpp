// conv2d: layout conventions against an independent NCHW loop for every configuration ConvNeXt uses
// (and the odd ones), fast paths against the reference loops, the bias gradient, determinism and
// errors. Gradients, devices and dtypes: the op harness (cases_conv2d.cpp); the Conv2d module:
// tests/layers/modules_test.cpp.
#include "kernels/conv2d.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/autograd.h"
#include "layers/conv2d.h"
#include "conv2d_configs.h"
#include "test_util.h"

using namespace hg;

namespace {

using test::ops::ConvConfig;
using test::ops::kConvConfigs;

Tensor weight_for(const ConvConfig& c, uint64_t seed, DType dt = DType::f64) {
  return test::random({c.O, c.C / c.groups, c.K, c.K}, seed, dt);
}

}  // namespace

// The NHWC result, read back in NCHW, equals conv2d written directly on NCHW data with the PyTorch
// weight layout (an oracle that shares no code or index helpers with the kernels).
TEST(Conv2d, MatchesIndependentNchwLoops) {
  for (const ConvConfig& c : kConvConfigs) {
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
