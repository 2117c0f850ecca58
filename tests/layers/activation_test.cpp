// GELU (exact erf form): values against the formula, f64 gradient by finite differences.
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

TEST(Gelu, Gradcheck) {
  Tensor x = test::random({2, 3, 4}, 2, DType::f64, -4, 4).requires_grad_();
  auto f = [](const std::vector<Tensor>& in) { return gelu(in[0]); };
  EXPECT_LT(test::gradcheck(f, {x}), 1e-8);
  auto f_view = [](const std::vector<Tensor>& in) { return gelu(in[0].permute({2, 0, 1})); };
  EXPECT_LT(test::gradcheck(f_view, {x}), 1e-8);
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
