// Layer scale (x * gamma over the last dim) and residual_add: values and errors. Gradients, devices
// and dtypes: the op harness (cases_layer_scale.cpp).
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

TEST(ResidualAdd, Values) {
  Tensor a = test::random({2, 2, 3}, 6), b = test::random({2, 2, 3}, 7);
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(), y = residual_add(a, b).to_vector<double>();
  for (size_t i = 0; i < y.size(); ++i) EXPECT_DOUBLE_EQ(y[i], av[i] + bv[i]);
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
