// Dropout (the ConvNeXt head's, timm's --drop): identity in eval / p = 0, a per-element mask drawn
// from the generator in memory order and scaled by 1/keep, the keep rate, errors, and the model's
// head using it in training only. Gradients (fixed mask seed), devices and dtypes: the op harness
// (cases_dropout.cpp).
#include <gtest/gtest.h>

#include "core/random.h"
#include "layers/dropout.h"
#include "models/convnext.h"
#include "test_util.h"

using namespace hg;

TEST(Dropout, IdentityInEvalOrZeroProb) {
  Tensor x = test::random({4, 6}, 1);
  Generator gen(7);
  const std::string before = gen.state();
  EXPECT_EQ(dropout(x, 0.5, false, gen).id(), x.id());
  EXPECT_EQ(dropout(x, 0.0, true, gen).id(), x.id());
  EXPECT_EQ(gen.state(), before);  // no numbers drawn
}

TEST(Dropout, MaskPerElementFollowsGeneratorAndScalesByKeep) {
  const double p = 0.4, keep = 1 - p;
  Tensor x = test::random({5, 7}, 2);
  Generator gen(42), replay(42);
  const std::vector<double> xv = x.to_vector<double>(),
                            yv = dropout(x, p, true, gen).to_vector<double>();
  int kept = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    const bool keep_i = replay.uniform() < keep;
    kept += keep_i;
    EXPECT_NEAR(yv[i], keep_i ? xv[i] / keep : 0.0, 1e-15) << i;
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 35);  // a mixed mask: both branches checked
  // element-wise, not per sample: some row holds both a kept and a dropped element
  bool mixed_row = false;
  for (size_t n = 0; n < 5; ++n) {
    int row_kept = 0;
    for (size_t c = 0; c < 7; ++c) row_kept += yv[n * 7 + c] != 0;
    mixed_row = mixed_row || (row_kept > 0 && row_kept < 7);
  }
  EXPECT_TRUE(mixed_row);
}

TEST(Dropout, KeepRateAndExpectation) {
  Tensor x = Tensor::full({100, 40}, 1.0, DType::f64);
  Generator gen(3);
  const std::vector<double> y = dropout(x, 0.25, true, gen).to_vector<double>();
  int kept = 0;
  double mean = 0;
  for (double v : y) {
    kept += v != 0;
    mean += v / 4000.0;
  }
  EXPECT_NEAR(kept / 4000.0, 0.75, 0.03);  // ~4.4 standard deviations
  EXPECT_NEAR(mean, 1.0, 0.04);            // scaled by 1/keep: the expectation is kept
}

TEST(Dropout, Errors) {
  Tensor x = test::random({2, 3}, 6);
  Generator gen(1);
  EXPECT_THROW(dropout(x, -0.1, true, gen), Error);
  EXPECT_THROW(dropout(x, 1.0, true, gen),
               Error);  // torch allows 1 (all zeros); the head needs a signal
  EXPECT_THROW(dropout(x, 1.5, false, gen), Error);
}

// drop_rate drops features before head.fc in training only: eval logits are those of the same
// weights without it, training logits change from call to call (new masks) and differ from eval.
TEST(Dropout, ConvNeXtHeadDropsInTrainingOnly) {
  ModelConfig with = model_config("convnext_atto");
  with.num_classes = 5;
  with.drop_rate = 0.5;
  ModelConfig without = with;
  without.drop_rate = 0.0;
  ConvNeXt a(with, 3), b(without, 3);  // same seed: the same weights
  const Tensor x = test::random({2, 32, 32, 3}, 4, DType::f32);
  const std::vector<double> eval_a = a.forward(x, false).to_vector<double>();
  EXPECT_EQ(eval_a, b.forward(x, false).to_vector<double>());
  const std::vector<double> t1 = a.forward(x, true).to_vector<double>(),
                            t2 = a.forward(x, true).to_vector<double>();
  EXPECT_NE(t1, eval_a);
  EXPECT_NE(t1, t2);
  EXPECT_EQ(b.forward(x, true).to_vector<double>(),
            eval_a);  // no drop path, no dropout: training = eval
  with.drop_rate = 1.0;
  EXPECT_THROW(with.validate(), Error);
}
