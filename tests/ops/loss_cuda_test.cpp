// GPU cross-entropy: a bad label gives NaN (not a crash). The op against the CPU (f32, tf32, bf16;
// loss and dlogits with and without label smoothing, ImageNet-sized rows, into poisoned, guarded
// buffers): the op harness (cases_loss.cpp). Top-k has no device version to test here:
// correct_topk (layers/loss.cpp) copies the logits to the host and runs one loop for every device.
#include <gtest/gtest.h>

#include <cmath>

#include "gpu/gpu_util.h"
#include "layers/loss.h"
#include "test_util.h"

using namespace hg;

TEST(GpuCrossEntropy, BadLabelGivesNaNNotACrash) {
  HG_REQUIRE_GPU();
  Tensor z = test::random({4, 5}, 4, DType::f32).to(Device::cuda);
  Tensor y = Tensor::from_vector<int64_t>({4}, {0, 5, 1, 2}).to(Device::cuda);
  EXPECT_TRUE(std::isnan(cross_entropy(z, y).item()));
}
