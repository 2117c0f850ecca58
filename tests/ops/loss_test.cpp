// Cross-entropy (with and without label smoothing) against -sum(q * log p) computed in the test,
// numerical stability, errors, and top-k accuracy. Gradients, devices and dtypes: the op harness
// (cases_loss.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

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
  EXPECT_THROW(correct_topk(z, y, 0), Error);
  EXPECT_THROW(correct_topk(z, y, K + 1), Error);
}
