// The ConvNeXt block's memory-saving fused ops: gelu_linear (GELU recomputed in backward) and
// residual_layer_scale (x + gamma * h in one pass) equal their composed forms, and gelu_linear keeps
// only its input for the backward. Gradients, devices and dtypes: the op harness
// (cases_linear.cpp, cases_layer_scale.cpp).
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "core/memory.h"
#include "core/ops.h"
#include "layers/activation.h"
#include "layers/layer_scale.h"
#include "layers/linear.h"
#include "test_util.h"

using namespace hg;

TEST(FusedBlockOps, GeluLinearMatchesComposed) {
  Tensor h = test::random({2, 3, 5}, 1), w = test::random({4, 5}, 2), b = test::random({4}, 3);
  autograd::NoGradGuard ng;
  EXPECT_LT(test::rel_error(gelu_linear(h, w, b), linear(gelu(h), w, b)), 1e-15);
}

TEST(FusedBlockOps, GeluLinearSavesOnlyItsInput) {
  // One (rows, 4C) hidden tensor is kept for backward, not two: live activations grow by y only.
  Tensor h = test::random({64, 32}, 4, DType::f32).requires_grad_();
  Tensor w = test::random({8, 32}, 5, DType::f32).requires_grad_();
  autograd::clear_tape();
  const int act = static_cast<int>(Category::activations);
  const int64_t before = memory::stats(Device::cpu).current[act];
  Tensor y = gelu_linear(h, w, Tensor());
  const int64_t grown = memory::stats(Device::cpu).current[act] - before;
  EXPECT_EQ(grown, 64 * 8 * 4);  // y only (64 x 8 floats, a multiple of 256 bytes)
  autograd::backward(ops::sum_all(y));
  EXPECT_TRUE(h.grad().defined());
}

TEST(FusedBlockOps, ResidualLayerScaleMatchesComposed) {
  Tensor x = test::random({2, 3, 4}, 6), h = test::random({2, 3, 4}, 7), gamma = test::random({4}, 8);
  autograd::NoGradGuard ng;
  EXPECT_LT(test::rel_error(residual_layer_scale(x, h, gamma), residual_add(x, layer_scale(h, gamma))), 1e-15);
  EXPECT_THROW(residual_layer_scale(x, h, test::random({3}, 9)), Error);
}
