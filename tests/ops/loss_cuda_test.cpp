// GPU cross-entropy: a bad label gives NaN (not a crash), top-k on CUDA equals the CPU's. The op
// against the CPU (f32, tf32, bf16; loss and dlogits with and without label smoothing, ImageNet-
// sized rows, into poisoned, guarded buffers): the op harness (cases_loss.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "gpu/gpu_util.h"
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
}  // namespace

TEST(GpuCrossEntropy, BadLabelGivesNaNNotACrash) {
  HG_REQUIRE_GPU();
  Tensor z = test::random({4, 5}, 4, DType::f32).to(Device::cuda);
  Tensor y = Tensor::from_vector<int64_t>({4}, {0, 5, 1, 2}).to(Device::cuda);
  EXPECT_TRUE(std::isnan(cross_entropy(z, y).item()));
}

TEST(GpuCrossEntropy, TopKMatchesCpu) {
  HG_REQUIRE_GPU();
  Tensor z = test::random({16, 100}, 5, DType::f32, -3, 3);
  Tensor y = random_labels(16, 100, 6);
  EXPECT_EQ(correct_topk(z.to(Device::cuda), y.to(Device::cuda), 5), correct_topk(z, y, 5));
}
