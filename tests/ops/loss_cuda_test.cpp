// GPU cross-entropy: a bad label gives NaN (not a crash). The op against the CPU (f32, tf32, bf16;
// loss and dlogits with and without label smoothing, ImageNet-sized rows, into poisoned, guarded
// buffers): the op harness (cases_loss.cpp). Top-k has no device version to test here:
// correct_topk (layers/loss.cpp) copies the logits to the host and runs one loop for every device.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/autograd.h"
#include "gpu/gpu_util.h"
#include "layers/loss.h"
#include "test_util.h"

using namespace hg;

// Equal logits far from 0 (f32 1e30): log K, as the CPU (loss_test.cpp's
// LogitsFarFromZeroKeepTheLogTerm): the loss was 0 when lse - z_y lost the log term.
TEST(GpuCrossEntropy, LogitsFarFromZeroKeepTheLogTerm) {
  HG_REQUIRE_GPU();
  const Tensor y = Tensor::from_vector<int64_t>({3}, {0, 999, 500}).to(Device::cuda);
  for (double s : {0.0, 0.1}) {
    Tensor z = Tensor::full({3, 1000}, -1e30, DType::f32, Device::cuda).requires_grad_();
    autograd::clear_tape();
    Tensor loss = cross_entropy(z, y, s);
    EXPECT_NEAR(loss.item(), std::log(1000.0), 1e-5);
    autograd::backward(loss);
    // each row of the gradient sums to 0 (softmax 1/1000 each; it was 1 each, summing to 999)
    const std::vector<double> g = z.grad().to_vector<double>();
    for (int i = 0; i < 3; ++i) {
      double row = 0;
      for (int j = 0; j < 1000; ++j) row += g[static_cast<size_t>(i * 1000 + j)];
      EXPECT_NEAR(row, 0.0, 1e-6) << s << " " << i;
      EXPECT_NEAR(g[static_cast<size_t>(i * 1000 + 1)], (1e-3 - s / 1000) / 3, 1e-8) << s;
    }
  }
  Tensor z = Tensor::full({3, 1000}, -1e30, DType::f32, Device::cuda).requires_grad_();
  const Tensor t = Tensor::full({3, 1000}, 1e-3, DType::f32, Device::cuda);
  autograd::clear_tape();
  Tensor soft_loss = soft_target_cross_entropy(z, t);
  EXPECT_NEAR(soft_loss.item(), std::log(1000.0), 1e-5);
  autograd::backward(soft_loss);
  for (const double v : z.grad().to_vector<double>()) EXPECT_NEAR(v, 0.0, 1e-8);
}

TEST(GpuCrossEntropy, BadLabelGivesNaNNotACrash) {
  HG_REQUIRE_GPU();
  Tensor z = test::random({4, 5}, 4, DType::f32).to(Device::cuda);
  Tensor y = Tensor::from_vector<int64_t>({4}, {0, 5, 1, 2}).to(Device::cuda);
  EXPECT_TRUE(std::isnan(cross_entropy(z, y).item()));
}
