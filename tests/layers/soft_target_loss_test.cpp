// Soft-target cross-entropy (timm's SoftTargetCrossEntropy, the loss of mixup / cutmix): values
// against -sum t log softmax computed in the test, float64 finite-difference gradients, agreement
// with the hard-label loss for smoothed one-hot targets, and errors.
#include <gtest/gtest.h>

#include <cmath>

#include "core/autograd.h"
#include "layers/loss.h"
#include "test_util.h"

using namespace hg;

namespace {
// Rows of non-negative targets summing to `mass` (1 for mixup targets).
Tensor soft_targets(int64_t n, int64_t k, uint64_t seed, double mass = 1.0) {
  std::vector<double> t = test::random({n, k}, seed, DType::f64, 0.0, 1.0).to_vector<double>();
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (int64_t j = 0; j < k; ++j) s += t[size_t(i * k + j)];
    for (int64_t j = 0; j < k; ++j) t[size_t(i * k + j)] *= mass / s;
  }
  return Tensor::from_vector<double>({n, k}, t);
}

double expected_soft_ce(const Tensor& logits, const Tensor& targets) {
  const std::vector<double> z = logits.to_vector<double>(), t = targets.to_vector<double>();
  const size_t N = size_t(logits.size(0)), K = size_t(logits.size(1));
  double total = 0;
  for (size_t i = 0; i < N; ++i) {
    double denom = 0;
    for (size_t j = 0; j < K; ++j) denom += std::exp(z[i * K + j]);
    for (size_t j = 0; j < K; ++j) total -= t[i * K + j] * std::log(std::exp(z[i * K + j]) / denom);
  }
  return total / double(N);
}
}  // namespace

TEST(SoftTargetCrossEntropy, Values) {
  const Tensor z = test::random({5, 7}, 1, DType::f64, -3, 3);
  const Tensor t = soft_targets(5, 7, 2);
  EXPECT_NEAR(soft_target_cross_entropy(z, t).item(), expected_soft_ce(z, t), 1e-12);
  EXPECT_NEAR(soft_target_cross_entropy(z.to(DType::f32), t.to(DType::f32)).item(),
              expected_soft_ce(z, t), 1e-5);
  const Tensor big = test::random({3, 4}, 3, DType::f64, 500, 900);  // stable for large logits
  EXPECT_TRUE(std::isfinite(soft_target_cross_entropy(big, soft_targets(3, 4, 4)).item()));
}

TEST(SoftTargetCrossEntropy, GradcheckFloat64) {
  for (double mass : {1.0, 0.7}) {  // the gradient also holds when rows do not sum to 1
    const Tensor t = soft_targets(4, 6, 5, mass);
    Tensor z = test::random({4, 6}, 6, DType::f64, -2, 2).requires_grad_();
    auto f = [t](const std::vector<Tensor>& in) { return soft_target_cross_entropy(in[0], t); };
    EXPECT_LT(test::gradcheck(f, {z}), 1e-7) << mass;
  }
}

TEST(SoftTargetCrossEntropy, SmoothedOneHotEqualsLabelSmoothing) {
  // mixup with lam = 1 gives (1 - s) one-hot + s / K: the same loss and gradient as
  // cross_entropy(s).
  const int64_t N = 4, K = 5;
  const double s = 0.1;
  const std::vector<int64_t> y = {0, 3, 4, 1};
  std::vector<double> t(size_t(N * K), s / K);
  for (int64_t i = 0; i < N; ++i) t[size_t(i * K + y[size_t(i)])] += 1 - s;
  const Tensor targets = Tensor::from_vector<double>({N, K}, t),
               labels = Tensor::from_vector<int64_t>({N}, y);
  Tensor z1 = test::random({N, K}, 7, DType::f64, -2, 2).requires_grad_();
  Tensor z2 = Tensor::from_vector<double>({N, K}, z1.to_vector<double>()).requires_grad_();
  Tensor a = soft_target_cross_entropy(z1, targets);
  autograd::backward(a);  // one loss per tape: backward clears it
  Tensor b = cross_entropy(z2, labels, s);
  autograd::backward(b);
  EXPECT_NEAR(a.item(), b.item(), 1e-14);
  EXPECT_LT(test::rel_error(z1.grad(), z2.grad()), 1e-13);
}

TEST(SoftTargetCrossEntropy, Errors) {
  const Tensor z = test::random({2, 3}, 8, DType::f64);
  EXPECT_THROW(soft_target_cross_entropy(z, soft_targets(2, 4, 9)), Error);                 // shape
  EXPECT_THROW(soft_target_cross_entropy(z, soft_targets(2, 3, 9).to(DType::f32)), Error);  // dtype
  EXPECT_THROW(soft_target_cross_entropy(test::random({6}, 1), test::random({6}, 2)),
               Error);  // not 2-D
}
