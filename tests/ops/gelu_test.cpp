// GELU (exact erf form): values against the formula, and integer inputs refused. Gradients,
// devices and dtypes: the op harness (cases_gelu.cpp).
#include <gtest/gtest.h>

#include <cmath>

#include "layers/activation.h"
#include "test_util.h"

using namespace hg;

TEST(Gelu, ValuesMatchErfFormula) {
  Tensor x = test::random({3, 4, 5}, 1, DType::f64, -6, 6);
  std::vector<double> xv = x.to_vector<double>(), y = gelu(x).to_vector<double>();
  std::vector<float> y32 = gelu(x.to(DType::f32)).to_vector<float>();
  for (size_t i = 0; i < xv.size(); ++i) {
    const double want = xv[i] * 0.5 * std::erfc(-xv[i] / std::sqrt(2.0));  // Phi via erfc
    EXPECT_NEAR(y[i], want, 1e-14) << xv[i];
    EXPECT_NEAR(y32[i], want, 1e-6 * (1 + std::fabs(want))) << xv[i];
  }
}

TEST(Gelu, RejectsIntegerTensors) {
  Tensor i = Tensor::from_vector<int64_t>({2}, {1, 2});
  try {
    gelu(i);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gelu"), std::string::npos) << e.what();
  }
}
