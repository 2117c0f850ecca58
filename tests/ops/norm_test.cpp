// layer_norm: values against an independent loop (f64 and f32), and error messages. Gradients,
// devices and dtypes: the op harness (cases_norm.cpp); the LayerNorm module:
// tests/layers/modules_test.cpp.
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
