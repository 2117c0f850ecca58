// The ConvNeXt block's memory-saving fused ops: gelu_linear (GELU recomputed in backward) and
// residual_layer_scale (x + gamma * h in one pass), and the drop-path branch (gelu_linear_scaled +
// add_scaled_samples) equal their composed forms, and gelu_linear keeps only its input for the
// backward. Gradients, devices and dtypes: the op harness
// (cases_linear.cpp, cases_layer_scale.cpp).
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "core/memory.h"
#include "core/ops.h"
#include "layers/activation.h"
#include "layers/drop_path.h"
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

TEST(FusedBlockOps, GeluLinearResidualMatchesComposedWithGradients) {
  // x + gamma * fc2(gelu(h)) with gamma folded into fc2's weight: the same values and the same
  // gradients (f64) for every input as the composed ops, with and without a bias.
  for (bool with_bias : {true, false}) {
    Tensor x = test::random({2, 3, 4}, 10).requires_grad_(),
           h = test::random({2, 3, 6}, 11).requires_grad_();
    Tensor w = test::random({4, 6}, 12).requires_grad_(),
           g = test::random({4}, 13).requires_grad_();
    Tensor b = with_bias ? test::random({4}, 14).requires_grad_() : Tensor();
    Tensor up = test::random({2, 3, 4}, 15);  // a non-uniform upstream gradient
    auto grads = [&](const Tensor& y) {
      for (Tensor* t : {&x, &h, &w, &g, &b})
        if (t->defined()) t->clear_grad();
      autograd::backward(ops::sum_all(ops::mul(y, up)));
      std::vector<Tensor> out;
      for (Tensor* t : {&x, &h, &w, &g, &b})
        if (t->defined()) out.push_back(t->grad().clone());
      return out;
    };
    const Tensor y_fused = gelu_linear_residual(x, h, w, b, g);
    const std::vector<Tensor> g_fused = grads(y_fused);
    const Tensor y_ref = residual_layer_scale(x, gelu_linear(h, w, b), g);
    const std::vector<Tensor> g_ref = grads(y_ref);
    EXPECT_LT(test::rel_error(y_fused, y_ref), 1e-14) << "bias " << with_bias;
    ASSERT_EQ(g_fused.size(), g_ref.size());
    for (size_t i = 0; i < g_ref.size(); ++i)
      EXPECT_LT(test::rel_error(g_fused[i], g_ref[i]), 1e-13)
          << "input " << i << " bias " << with_bias;
  }
}

TEST(FusedBlockOps, GeluLinearResidualNamesMismatchedShapes) {
  const Tensor x = test::random({2, 4}, 16), h = test::random({2, 6}, 17);
  const Tensor w = test::random({4, 6}, 18), g = test::random({4}, 19), b = test::random({4}, 20);
  try {
    gelu_linear_residual(test::random({2, 5}, 21), h, w, b, g);
    FAIL() << "a shortcut of the wrong width was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shortcut must be [2, 4]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gelu_linear_residual(x, h, w, b, test::random({3}, 22)), Error);
  EXPECT_THROW(gelu_linear_residual(x, h, test::random({4, 5}, 23), b, g), Error);
}

TEST(FusedBlockOps, DroppedBranchMatchesComposedWithGradients) {
  // x + drop_path(gamma * fc2(gelu(h))) as the block runs it under drop path (gamma folded into
  // fc2's weight, the per-sample scale applied in the residual pass) against the composed ops:
  // the same values and gradients (f64) for a dropped, a kept and a rescaled sample.
  Tensor x = test::random({3, 2, 4}, 30).requires_grad_(),
         h = test::random({3, 2, 6}, 31).requires_grad_();
  Tensor w = test::random({4, 6}, 32).requires_grad_(), g = test::random({4}, 33).requires_grad_(),
         b = test::random({4}, 34).requires_grad_();
  const Tensor scale = Tensor::from_vector<double>({3}, {0.0, 1.25, 2.0});
  const Tensor up = test::random({3, 2, 4}, 35);
  auto grads = [&](const Tensor& y) {
    for (Tensor* t : {&x, &h, &w, &g, &b}) t->clear_grad();
    autograd::backward(ops::sum_all(ops::mul(y, up)));
    std::vector<Tensor> out;
    for (Tensor* t : {&x, &h, &w, &g, &b}) out.push_back(t->grad().clone());
    return out;
  };
  const Tensor y_fused = add_scaled_samples(x, gelu_linear_scaled(h, w, b, g), scale);
  const std::vector<Tensor> g_fused = grads(y_fused);
  const Tensor y_ref = residual_add(x, scale_samples(layer_scale(gelu_linear(h, w, b), g), scale));
  const std::vector<Tensor> g_ref = grads(y_ref);
  EXPECT_LT(test::rel_error(y_fused, y_ref), 1e-14);
  for (size_t i = 0; i < g_ref.size(); ++i)
    EXPECT_LT(test::rel_error(g_fused[i], g_ref[i]), 1e-13) << "input " << i;
  // the dropped sample's rows are the shortcut's, exactly
  EXPECT_EQ(test::rel_error(y_fused.slice(0, 0, 1), x.slice(0, 0, 1)), 0.0);
}

TEST(FusedBlockOps, AddScaledSamplesNamesMismatches) {
  const Tensor x = test::random({2, 4}, 40), z = test::random({2, 4}, 41);
  try {
    add_scaled_samples(x, z, Tensor::from_vector<double>({3}, {1.0, 1.0, 1.0}));
    FAIL() << "a scale of the wrong length was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scale must be [2]"), std::string::npos) << e.what();
  }
  try {
    add_scaled_samples(x, test::random({2, 5}, 42), Tensor::from_vector<double>({2}, {1.0, 0.0}));
    FAIL() << "a branch of the wrong shape was accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_TRUE(m.find("and z ") != std::string::npos && m.find("[2, 5]") != std::string::npos)
        << m;
  }
}
