// DropPath: identity in eval / p = 0, per-sample mask drawn from the generator and scaled by 1/keep,
// keep rate, errors. Gradients (fixed mask seed), devices and dtypes: the op harness
// (cases_drop_path.cpp).
#include <gtest/gtest.h>

#include "core/random.h"
#include "layers/drop_path.h"
#include "test_util.h"

using namespace hg;

TEST(DropPath, IdentityInEvalOrZeroProb) {
  Tensor x = test::random({4, 3, 3, 2}, 1);
  Generator gen(7);
  const std::string before = gen.state();
  EXPECT_EQ(drop_path(x, 0.5, false, gen).id(), x.id());
  EXPECT_EQ(drop_path(x, 0.0, true, gen).id(), x.id());
  EXPECT_EQ(gen.state(), before);  // no numbers drawn
}

TEST(DropPath, MaskFollowsGeneratorAndScalesByKeep) {
  const double p = 0.3, keep = 1 - p;
  Tensor x = test::random({16, 2, 2, 3}, 2);
  Generator gen(42), replay(42);
  Tensor y = drop_path(x, p, true, gen);
  const std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>();
  const size_t inner = 12;
  int kept = 0;
  for (size_t n = 0; n < 16; ++n) {
    const bool keep_n = replay.uniform() < keep;
    kept += keep_n;
    for (size_t i = 0; i < inner; ++i)
      EXPECT_NEAR(yv[n * inner + i], keep_n ? xv[n * inner + i] / keep : 0.0, 1e-15) << n;
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 16);  // the seed gives a mixed mask, so both branches are checked
}

TEST(DropPath, KeepRateAndDropAll) {
  Tensor x = Tensor::full({4000, 1}, 1.0, DType::f64);
  Generator gen(3);
  std::vector<double> y = drop_path(x, 0.25, true, gen).to_vector<double>();
  int kept = 0;
  for (double v : y) kept += v != 0;
  EXPECT_NEAR(kept / 4000.0, 0.75, 0.03);  // ~4.4 standard deviations
  double mean = 0;
  for (double v : y) mean += v / 4000.0;
  EXPECT_NEAR(mean, 1.0, 0.04);  // scale_by_keep preserves the expectation
  for (double v : drop_path(x, 1.0, true, gen).to_vector<double>()) EXPECT_EQ(v, 0.0);
}

TEST(DropPath, Errors) {
  Tensor x = test::random({2, 3}, 6);
  Generator gen(1);
  EXPECT_THROW(drop_path(x, -0.1, true, gen), Error);
  EXPECT_THROW(drop_path(x, 1.5, false, gen), Error);
  EXPECT_THROW(scale_samples(x, test::random({3}, 7)), Error);
  EXPECT_THROW(scale_samples(x, test::random({2}, 7, DType::f32)), Error);
}
