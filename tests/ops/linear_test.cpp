// linear: values against independent loops on any-rank inputs, a non-contiguous input, the GEMM
// path against the reference loops, and errors. Gradients, devices and dtypes: the op harness
// (cases_linear.cpp); the Linear module: tests/layers/modules_test.cpp.
#include "kernels/linear.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/autograd.h"
#include "layers/linear.h"
#include "test_util.h"

using namespace hg;

TEST(Linear, ValuesOverLastDimOfAnyRank) {
  for (Shape xs : {Shape{5}, Shape{3, 5}, Shape{2, 3, 5}, Shape{2, 2, 3, 5}}) {
    Tensor x = test::random(xs, 1), w = test::random({4, 5}, 2), b = test::random({4}, 3);
    for (bool with_bias : {true, false}) {
      Tensor y = linear(x, w, with_bias ? b : Tensor());
      Shape ys = xs;
      ys.back() = 4;
      ASSERT_EQ(y.shape(), ys);
      std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>(),
                          bv = b.to_vector<double>(), yv = y.to_vector<double>();
      const size_t rows = xv.size() / 5;
      for (size_t m = 0; m < rows; ++m)
        for (size_t o = 0; o < 4; ++o) {
          double acc = with_bias ? bv[o] : 0.0;
          for (size_t i = 0; i < 5; ++i) acc += xv[m * 5 + i] * wv[o * 5 + i];
          EXPECT_NEAR(yv[m * 4 + o], acc, 1e-12);
        }
    }
  }
}

// A non-contiguous input (a permuted NCHW view) gives the same result as its dense copy.
TEST(Linear, NonContiguousInput) {
  Tensor x = test::random({2, 5, 3, 3}, 1).permute({0, 2, 3, 1});  // (2, 3, 3, 5) view
  Tensor w = test::random({4, 5}, 2), b = test::random({4}, 3);
  EXPECT_LT(test::rel_error(linear(x, w, b), linear(x.contiguous(), w, b)), 1e-15);
  // its gradient: the registry case linear_permuted_input
}

template <typename T>
void check_linear_kernels(int64_t M, int64_t in, int64_t out, double tol) {
  const DType dt = dtype_of<T>();
  Tensor x = test::random({M, in}, 11, dt), w = test::random({out, in}, 12, dt),
         b = test::random({out}, 13, dt);
  Tensor gy = test::random({M, out}, 14, dt);
  Tensor y0 = Tensor::empty({M, out}, dt), y1 = Tensor::full({M, out}, NAN, dt);
  kernels::cpu::linear_forward_reference<T>(M, in, out, x.data<T>(), w.data<T>(), b.data<T>(),
                                            y0.data<T>());
  kernels::cpu::linear_forward<T>(M, in, out, x.data<T>(), w.data<T>(), b.data<T>(), y1.data<T>());
  EXPECT_LT(test::rel_error(y1, y0), tol);
  // Backward as forward products with the reference: grad_x = gy w, grad_w = gy^T x.
  Tensor gx = Tensor::full({M, in}, NAN, dt), gw = Tensor::full({out, in}, NAN, dt),
         gb = Tensor::full({out}, NAN, dt);
  kernels::cpu::linear_backward_input<T>(M, in, out, gy.data<T>(), w.data<T>(), gx.data<T>());
  kernels::cpu::linear_backward_weight<T>(M, in, out, x.data<T>(), gy.data<T>(), gw.data<T>());
  kernels::cpu::bias_grad_rows<T>(M, out, gy.data<T>(), gb.data<T>());
  std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>(),
                      g = gy.to_vector<double>();
  std::vector<double> ex(M * in, 0.0), ew(out * in, 0.0), eb(out, 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t o = 0; o < out; ++o) {
      eb[o] += g[m * out + o];
      for (int64_t i = 0; i < in; ++i) {
        ex[m * in + i] += g[m * out + o] * wv[o * in + i];
        ew[o * in + i] += g[m * out + o] * xv[m * in + i];
      }
    }
  EXPECT_LT(test::rel_error(gx, Tensor::from_vector({M, in}, ex)), tol);
  EXPECT_LT(test::rel_error(gw, Tensor::from_vector({out, in}, ew)), tol);
  EXPECT_LT(test::rel_error(gb, Tensor::from_vector({out}, eb)), tol);
}

TEST(Linear, GemmPathMatchesReference) {
  check_linear_kernels<double>(37, 19, 23, 1e-12);
  check_linear_kernels<float>(37, 19, 23, 1e-5);
  check_linear_kernels<double>(2 * 7 * 7, 96, 384, 1e-12);  // a ConvNeXt MLP fc1 on 7x7
  check_linear_kernels<float>(2 * 7 * 7, 384, 96, 1e-5);    // fc2
}

TEST(Linear, BadInputsThrowNamingOpAndShapes) {
  Tensor x = test::random({2, 3, 4}, 1), w = test::random({5, 4}, 2), b = test::random({5}, 3);
  try {
    linear(x, test::random({5, 3}, 2), b);
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("linear"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3, 4]"), std::string::npos) << m;
    EXPECT_NE(m.find("[5, 3]"), std::string::npos) << m;
  }
  EXPECT_THROW(linear(x, w, test::random({4}, 3)), Error);
  EXPECT_THROW(linear(x, test::random({5, 4, 1}, 2), b), Error);
  EXPECT_THROW(linear(x, w.to(DType::f32), b), Error);
  EXPECT_THROW(linear(x, w, b.to(DType::f32)), Error);
}
