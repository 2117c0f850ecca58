// The worked example of docs/autograd.md, compiled and gradient-checked: a user-written fused op
// (residual + layer scale) plugs into the tape with one autograd::record call.
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "core/ops.h"
#include "test_util.h"

using namespace hg;

namespace {

// y = x + gamma * h, gamma (C) broadcast over the last dim of x, h (..., C).
Tensor residual_layer_scale(const Tensor& x, const Tensor& h, const Tensor& gamma) {
  check_same_shape("residual_layer_scale", x, h);
  const int64_t C = gamma.numel(), rows = x.numel() / C;
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  const double *px = x.data<double>(), *ph = h.data<double>(), *pg = gamma.data<double>();
  double* py = y.data<double>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c) py[r * C + c] = px[r * C + c] + pg[c] * ph[r * C + c];

  autograd::record("residual_layer_scale", {x, h, gamma}, {y}, [h, gamma, C, rows](autograd::Backward& g) {
    const Tensor& gy = g.grad_output(0);
    Tensor gh, ggamma;
    if (g.needs_grad(1)) {  // dL/dh = gamma * dL/dy
      gh = Tensor::empty(gy.shape(), gy.dtype(), gy.device());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < C; ++c)
          gh.data<double>()[r * C + c] = gamma.data<double>()[c] * gy.data<double>()[r * C + c];
    }
    if (g.needs_grad(2)) {  // dL/dgamma[c] = sum over rows of dL/dy * h
      ggamma = Tensor::zeros(gamma.shape(), gamma.dtype(), gamma.device());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < C; ++c)
          ggamma.data<double>()[c] += gy.data<double>()[r * C + c] * h.data<double>()[r * C + c];
    }
    return std::vector<Tensor>{gy, gh, ggamma};
  });
  return y;
}

}  // namespace

TEST(CustomOp, WorkedExampleGradchecks) {
  Tensor x = test::random({2, 3, 4}, 1).requires_grad_();
  Tensor h = test::random({2, 3, 4}, 2).requires_grad_();
  Tensor gamma = test::random({4}, 3).requires_grad_();
  auto f = [](const std::vector<Tensor>& in) { return residual_layer_scale(in[0], in[1], in[2]); };
  EXPECT_LT(test::gradcheck(f, {x, h, gamma}), 1e-8);
}

TEST(CustomOp, WorkedExampleMatchesComposedOps) {
  Tensor x = test::random({5, 4}, 4), h = test::random({5, 4}, 5), gamma = test::random({4}, 6);
  Tensor fused = residual_layer_scale(x, h, gamma);
  std::vector<double> xv = x.to_vector<double>(), hv = h.to_vector<double>(), gv = gamma.to_vector<double>(),
                      yv = fused.to_vector<double>();
  for (size_t i = 0; i < yv.size(); ++i) EXPECT_DOUBLE_EQ(yv[i], xv[i] + gv[i % 4] * hv[i]);
}

TEST(CustomOp, NoGradModeKeepsNothing) {
  Tensor x = test::random({2, 4}, 7).requires_grad_();
  autograd::NoGradGuard ng;
  residual_layer_scale(x, x, test::random({4}, 8));
  EXPECT_EQ(autograd::tape_size(), 0u);
}
