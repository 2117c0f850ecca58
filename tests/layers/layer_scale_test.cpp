// Layer scale (x * gamma over the last dim) and residual_add: values, f64 gradients, errors.
#include <gtest/gtest.h>

#include "layers/layer_scale.h"
#include "test_util.h"

using namespace hg;

TEST(LayerScale, ValuesBroadcastOverLastDim) {
  Tensor x = test::random({2, 3, 2, 4}, 1), g = test::random({4}, 2);
  std::vector<double> xv = x.to_vector<double>(), gv = g.to_vector<double>(), y = layer_scale(x, g).to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_DOUBLE_EQ(y[i], xv[i] * gv[i % 4]);
  EXPECT_LT(test::rel_error(layer_scale(x.to(DType::f32), g.to(DType::f32)), layer_scale(x, g)), 1e-7);
}

TEST(LayerScale, GradcheckXAndGamma) {
  Tensor x = test::random({2, 3, 3, 5}, 3).requires_grad_();
  Tensor g = test::random({5}, 4).requires_grad_();
  auto f = [](const std::vector<Tensor>& in) { return layer_scale(in[0], in[1]); };
  EXPECT_LT(test::gradcheck(f, {x, g}), 1e-8);
  Tensor g_only = test::random({5}, 5).requires_grad_();
  auto f_gamma = [x](const std::vector<Tensor>& in) { return layer_scale(x.permute({0, 2, 1, 3}), in[0]); };
  EXPECT_LT(test::gradcheck(f_gamma, {g_only}), 1e-8);
}

TEST(ResidualAdd, ValuesAndGradcheck) {
  Tensor a = test::random({2, 2, 3}, 6).requires_grad_(), b = test::random({2, 2, 3}, 7).requires_grad_();
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(), y = residual_add(a, b).to_vector<double>();
  for (size_t i = 0; i < y.size(); ++i) EXPECT_DOUBLE_EQ(y[i], av[i] + bv[i]);
  // The block pattern: x + layer_scale(f(x)), x used twice.
  Tensor g = test::random({3}, 8).requires_grad_();
  auto f = [](const std::vector<Tensor>& in) { return residual_add(in[0], layer_scale(in[1], in[2])); };
  EXPECT_LT(test::gradcheck(f, {a, b, g}), 1e-8);
}

TEST(LayerScale, ErrorsNameOpAndShapes) {
  Tensor x = test::random({2, 4}, 9);
  try {
    layer_scale(x, test::random({3}, 10));
    FAIL() << "no throw";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("layer_scale"), std::string::npos) << m;
    EXPECT_NE(m.find("[3]"), std::string::npos) << m;
  }
  EXPECT_THROW(layer_scale(x, test::random({4}, 11, DType::f32)), Error);
  try {
    residual_add(x, test::random({4, 2}, 12));
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("residual_add"), std::string::npos) << e.what();
  }
}
