// The modules of layers/: Conv2d, Linear and LayerNorm own their parameters under timm's names,
// with timm's init, and forward through the functional ops (whose math, gradients, devices and
// dtypes the op harness tests: tests/ops).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "layers/conv2d.h"
#include "layers/linear.h"
#include "layers/norm.h"
#include "test_util.h"

using namespace hg;

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

TEST(Linear, ModuleParametersInitAndForward) {
  Generator gen(3);
  Linear fc(96, 384, gen, true, DType::f64);
  auto named = fc.named_tensors();
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].name, "weight");
  EXPECT_EQ(named[0].tensor.shape(), (Shape{384, 96}));
  EXPECT_FALSE(named[0].no_weight_decay);
  EXPECT_EQ(named[1].name, "bias");
  EXPECT_TRUE(named[1].no_weight_decay);
  for (double v : fc.bias.to_vector<double>()) EXPECT_EQ(v, 0.0);
  std::vector<double> wv = fc.weight.to_vector<double>();
  double sq = 0, mx = 0;
  for (double v : wv) sq += v * v, mx = std::max(mx, std::fabs(v));
  EXPECT_NEAR(std::sqrt(sq / wv.size()), 0.02, 0.001);
  EXPECT_LE(mx, 2.0);
  EXPECT_GT(mx, 0.0);
  EXPECT_EQ(fc.forward(test::random({2, 7, 7, 96}, 1)).shape(), (Shape{2, 7, 7, 384}));
  Linear head(8, 3, gen, false, DType::f64);
  EXPECT_EQ(head.named_tensors().size(), 1u);
  EXPECT_THROW(Linear(0, 3, gen), Error);
}

TEST(LayerNorm, ModuleInitNamesAndNormalisation) {
  LayerNorm ln(7, 1e-6, DType::f64);
  EXPECT_EQ(ln.weight.to_vector<double>(), std::vector<double>(7, 1.0));
  EXPECT_EQ(ln.bias.to_vector<double>(), std::vector<double>(7, 0.0));
  EXPECT_TRUE(ln.weight.requires_grad());
  std::vector<ParamRef> refs;
  ln.collect("head.norm.", refs);
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].name, "head.norm.weight");
  EXPECT_EQ(refs[1].name, "head.norm.bias");
  EXPECT_TRUE(refs[0].no_weight_decay && refs[1].no_weight_decay);
  Tensor y = ln.forward(test::random({3, 7}, 31, DType::f64, 5, 9));
  std::vector<double> v = y.to_vector<double>();
  for (int r = 0; r < 3; ++r) {
    double mean = 0, sq = 0;
    for (int c = 0; c < 7; ++c) mean += v[static_cast<size_t>(r * 7 + c)] / 7;
    for (int c = 0; c < 7; ++c) sq += v[static_cast<size_t>(r * 7 + c)] * v[static_cast<size_t>(r * 7 + c)] / 7;
    EXPECT_NEAR(mean, 0.0, 1e-12);
    EXPECT_NEAR(sq - mean * mean, 1.0, 1e-4);  // var / (var + eps) with var ~ 1
  }
}
