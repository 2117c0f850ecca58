// Cross-entropy (with and without label smoothing) against -sum(q * log p) computed in the test,
// numerical stability, errors, and top-k accuracy. Gradients, devices and dtypes: the op harness
// (cases_loss.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/autograd.h"
#include "layers/loss.h"
#include "test_util.h"

using namespace hg;

namespace {
Tensor random_labels(int64_t n, int64_t k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& y : v) y = static_cast<int64_t>(rng() % static_cast<uint64_t>(k));
  return Tensor::from_vector<int64_t>({n}, v);
}

// Mean over rows of -sum_j q_j log softmax_j with q = (1-s) onehot + s/K (PyTorch's smoothing).
double expected_ce(const Tensor& logits, const Tensor& labels, double s) {
  const std::vector<double> z = logits.to_vector<double>();
  const std::vector<int64_t> y = labels.to_vector<int64_t>();
  const size_t N = y.size(), K = z.size() / N;
  double total = 0;
  for (size_t i = 0; i < N; ++i) {
    double denom = 0;
    for (size_t j = 0; j < K; ++j) denom += std::exp(z[i * K + j]);
    for (size_t j = 0; j < K; ++j) {
      const double q = (static_cast<int64_t>(j) == y[i] ? 1.0 - s : 0.0) + s / static_cast<double>(K);
      total -= q * std::log(std::exp(z[i * K + j]) / denom);
    }
  }
  return total / static_cast<double>(N);
}
}  // namespace

TEST(CrossEntropy, ValuesWithAndWithoutSmoothing) {
  Tensor z = test::random({5, 7}, 1, DType::f64, -3, 3);
  Tensor y = random_labels(5, 7, 2);
  for (double s : {0.0, 0.1, 1.0}) {
    Tensor loss = cross_entropy(z, y, s);
    EXPECT_EQ(loss.ndim(), 0);
    EXPECT_NEAR(loss.item(), expected_ce(z, y, s), 1e-12) << s;
    EXPECT_NEAR(cross_entropy(z.to(DType::f32), y, s).item(), expected_ce(z, y, s), 1e-5) << s;
  }
}

TEST(CrossEntropy, StableForLargeLogits) {
  // exp(1000) overflows double: the log-sum-exp must subtract the row max.
  Tensor z = test::random({3, 4}, 5, DType::f64, 999, 1001);
  Tensor y = random_labels(3, 4, 6);
  Tensor shifted = test::random({3, 4}, 5, DType::f64, -1, 1);  // same draws, minus 1000
  const double loss = cross_entropy(z, y).item();
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_NEAR(loss, expected_ce(shifted, y, 0.0), 1e-9);  // softmax is shift-invariant
}

// Logits far from 0 (a head bias of 1e30, a diverging run): lse = mx + log(sum) cannot hold the
// log term beside mx, and lse - z_y gave a loss of 0 (top-1 100% beside it) where torch's
// log_softmax gives log K for equal logits, and exp(z - lse) a softmax of 1 for each, the
// gradient's row summing to K - 1. Each lse - z_j is now (mx - z_j) + log(sum), in both passes.
TEST(CrossEntropy, LogitsFarFromZeroKeepTheLogTerm) {
  const int64_t N = 3, K = 4;
  const std::vector<int64_t> labels = {0, 3, 1};
  const Tensor y = Tensor::from_vector<int64_t>({N}, labels);
  const Tensor soft = Tensor::full({N, K}, 0.25, DType::f64);  // mass 1
  for (const auto& [dtype, offset] :
       {std::pair{DType::f64, 1e20}, std::pair{DType::f32, 1e30}, std::pair{DType::f64, -1e30},
        std::pair{DType::f32, -1e9}, std::pair{DType::f32, 1e8}}) {
    for (double s : {0.0, 0.1}) {
      Tensor z = Tensor::full({N, K}, offset, dtype).requires_grad_();
      autograd::clear_tape();
      Tensor loss = cross_entropy(z, y, s);
      EXPECT_NEAR(loss.item(), std::log(4.0), 1e-6) << offset << " " << s;
      autograd::backward(loss);
      // torch: (softmax - (1 - s) onehot - s / K) / N, softmax 1/4 at equal logits
      const std::vector<double> g = z.grad().to_vector<double>();
      for (int64_t i = 0; i < N; ++i)
        for (int64_t j = 0; j < K; ++j) {
          const double onehot = j == labels[static_cast<size_t>(i)] ? 1 : 0;
          EXPECT_NEAR(g[static_cast<size_t>(i * K + j)], (0.25 - (1 - s) * onehot - s / K) / N,
                      1e-7)
              << offset << " " << s << " " << i << "," << j;
        }
    }
    Tensor z = Tensor::full({N, K}, offset, dtype).requires_grad_();
    autograd::clear_tape();
    Tensor soft_loss = soft_target_cross_entropy(z, soft.to(dtype));
    EXPECT_NEAR(soft_loss.item(), std::log(4.0), 1e-6) << offset;
    autograd::backward(soft_loss);  // softmax - t = 0 at equal logits and uniform targets
    for (const double v : z.grad().to_vector<double>()) EXPECT_NEAR(v, 0.0, 1e-7) << offset;
  }
  // a -inf logit with no smoothing: finite, as torch's (0 x inf made the unused smoothing term NaN)
  const Tensor inf_row = Tensor::from_vector<double>({1, 3}, {0, -INFINITY, 0});
  EXPECT_NEAR(cross_entropy(inf_row, Tensor::from_vector<int64_t>({1}, {0})).item(), std::log(2.0),
              1e-12);
  EXPECT_NEAR(
      soft_target_cross_entropy(inf_row, Tensor::from_vector<double>({1, 3}, {0.5, 0, 0.5})).item(),
      std::log(2.0), 1e-12);
  // one logit far above the rest: the loss is the gap for the others' labels, ~0 for its own
  const Tensor z =
      Tensor::from_vector<double>({2, 3}, {1e17 + 4096, 1e17, 1e17, 1e17 + 4096, 1e17, 1e17});
  const Tensor y2 = Tensor::from_vector<int64_t>({2}, {0, 1});
  EXPECT_NEAR(cross_entropy(z, y2).item(), 4096.0 / 2, 1e-6);
}

TEST(CrossEntropy, Errors) {
  Tensor z = test::random({3, 4}, 7);
  EXPECT_THROW(cross_entropy(z, Tensor::from_vector<int64_t>({3}, {0, 4, 1})), Error);   // label == K
  EXPECT_THROW(cross_entropy(z, Tensor::from_vector<int64_t>({3}, {0, -1, 1})), Error);  // negative
  EXPECT_THROW(cross_entropy(z, Tensor::from_vector<int64_t>({2}, {0, 1})), Error);      // N mismatch
  EXPECT_THROW(cross_entropy(z, test::random({3}, 8)), Error);                           // not i64
  EXPECT_THROW(cross_entropy(z, random_labels(3, 4, 9), 1.5), Error);                    // smoothing
  try {
    cross_entropy(test::random({3}, 10), random_labels(3, 4, 9));
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cross_entropy"), std::string::npos) << e.what();
  }
}

TEST(Accuracy, TopKMatchesSortedRanks) {
  const int64_t N = 50, K = 10;
  Tensor z = test::random({N, K}, 11);
  Tensor y = random_labels(N, K, 12);
  const std::vector<double> zv = z.to_vector<double>();
  const std::vector<int64_t> yv = y.to_vector<int64_t>();
  for (int64_t k : {1, 3, 10}) {
    int64_t want = 0;
    for (int64_t i = 0; i < N; ++i) {
      std::vector<int64_t> order(static_cast<size_t>(K));
      for (int64_t j = 0; j < K; ++j) order[static_cast<size_t>(j)] = j;
      std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return zv[static_cast<size_t>(i * K + a)] > zv[static_cast<size_t>(i * K + b)];
      });
      want += std::find(order.begin(), order.begin() + k, yv[static_cast<size_t>(i)]) != order.begin() + k;
    }
    EXPECT_EQ(correct_topk(z, y, k), want) << k;
    EXPECT_DOUBLE_EQ(accuracy_topk(z, y, k), static_cast<double>(want) / N) << k;
  }
  EXPECT_EQ(correct_topk(z, y, K), N);
  // equal logits rank by index, the lower first: a model of equal logits scores the share of
  // label 0 in top-1 (it scored 100%: ties went to the label), of labels 0-2 in top-3
  const Tensor flat = Tensor::full({4, 5}, 1.5, DType::f32);
  const Tensor labels = Tensor::from_vector<int64_t>({4}, {0, 1, 2, 4});
  EXPECT_EQ(correct_topk(flat, labels, 1), 1);
  EXPECT_EQ(correct_topk(flat, labels, 3), 3);
  EXPECT_EQ(correct_topk(flat, labels, 5), 4);
  // a tie below a larger logit: label 3 ties with 1 behind 0's larger logit
  const Tensor tie = Tensor::from_vector<double>({1, 4}, {9, 2, 0, 2});
  EXPECT_EQ(correct_topk(tie, Tensor::from_vector<int64_t>({1}, {3}), 2), 0);
  EXPECT_EQ(correct_topk(tie, Tensor::from_vector<int64_t>({1}, {3}), 3), 1);
  EXPECT_EQ(correct_topk(tie, Tensor::from_vector<int64_t>({1}, {1}), 2), 1);
  EXPECT_THROW(correct_topk(z, y, 0), Error);
  EXPECT_THROW(correct_topk(z, y, K + 1), Error);
}
