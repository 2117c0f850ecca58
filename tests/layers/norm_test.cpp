// LayerNorm: values against an independent loop, f64 gradients by finite differences on a 4-D NHWC
// tensor, the module's names and init, and error messages.
#include <gtest/gtest.h>

#include <cmath>

#include "core/autograd.h"
#include "layers/norm.h"
#include "test_util.h"

using namespace hg;

namespace {
// y over the last dim, straight from the definition (biased variance).
std::vector<double> expected_layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  const std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>(), bv = b.to_vector<double>();
  const size_t C = wv.size(), rows = xv.size() / C;
  std::vector<double> y(xv.size());
  for (size_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (size_t c = 0; c < C; ++c) mean += xv[r * C + c] / static_cast<double>(C);
    for (size_t c = 0; c < C; ++c) var += (xv[r * C + c] - mean) * (xv[r * C + c] - mean) / static_cast<double>(C);
    for (size_t c = 0; c < C; ++c) y[r * C + c] = (xv[r * C + c] - mean) / std::sqrt(var + eps) * wv[c] + bv[c];
  }
  return y;
}
}  // namespace

TEST(LayerNorm, ValuesMatchDefinitionF64AndF32) {
  Tensor x = test::random({2, 3, 4, 6}, 1, DType::f64, -2, 3);
  Tensor w = test::random({6}, 2), b = test::random({6}, 3);
  for (double eps : {1e-6, 1e-2}) {
    std::vector<double> want = expected_layer_norm(x, w, b, eps);
    std::vector<double> got = layer_norm(x, w, b, eps).to_vector<double>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
    Tensor y32 = layer_norm(x.to(DType::f32), w.to(DType::f32), b.to(DType::f32), eps);
    EXPECT_EQ(y32.dtype(), DType::f32);
    EXPECT_LT(test::rel_error(y32, Tensor::from_vector(x.shape(), want)), 1e-6);
  }
}

TEST(LayerNorm, GradcheckNHWCAllInputs) {
  Tensor x = test::random({2, 3, 3, 5}, 11).requires_grad_();
  Tensor w = test::random({5}, 12, DType::f64, 0.5, 1.5).requires_grad_();
  Tensor b = test::random({5}, 13).requires_grad_();
  auto f = [](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2], 1e-6); };
  EXPECT_LT(test::gradcheck(f, {x, w, b}), 1e-7);
}

TEST(LayerNorm, GradcheckNonContiguousInputAndOnlyX) {
  // A permuted (non-dense) view and a 2-D input; weight and bias constants.
  Tensor x = test::random({4, 3, 5}, 21).requires_grad_();
  Tensor w = test::random({4}, 22), b = test::random({4}, 23);
  auto f = [w, b](const std::vector<Tensor>& in) { return layer_norm(in[0].permute({2, 1, 0}), w, b, 1e-5); };
  EXPECT_LT(test::gradcheck(f, {x}), 1e-7);
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

TEST(LayerNorm, ErrorsNameOpAndShapes) {
  Tensor x = test::random({2, 5}, 41), w = test::random({4}, 42), b = test::random({5}, 43);
  try {
    layer_norm(x, w, b);
    FAIL() << "no throw";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("layer_norm"), std::string::npos) << m;
    EXPECT_NE(m.find("[4]"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 5]"), std::string::npos) << m;
  }
  EXPECT_THROW(layer_norm(x, test::random({5}, 44, DType::f32), b), Error);
  EXPECT_THROW(layer_norm(x, b, b, 0.0), Error);
  EXPECT_THROW(LayerNorm(0), Error);
}
