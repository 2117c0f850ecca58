// Generator::fill_normal: the fast standard-normal fill of random erasing's per-pixel noise.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/random.h"

namespace {

TEST(GeneratorFillNormal, StandardNormalMomentsAndBound) {
  hg::Generator gen(7);
  std::vector<float> v(200001, 99.0f);  // odd: the last value comes from a pair's first half
  gen.fill_normal(v.data(), static_cast<int64_t>(v.size()));
  double sum = 0, sq = 0, quart = 0, within1 = 0;
  for (float x : v) {
    ASSERT_TRUE(std::isfinite(x));
    ASSERT_LE(std::fabs(x), 5.78f);  // sqrt(48 ln 2): the 24-bit uniforms' bound
    sum += x, sq += double(x) * x, quart += double(x) * x * x * x;
    within1 += std::fabs(x) < 1.0f;
  }
  const double n = double(v.size());
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sq / n, 1.0, 0.01);
  EXPECT_NEAR(quart / n, 3.0, 0.06);  // a normal's kurtosis, not a uniform's 1.8
  EXPECT_NEAR(within1 / n, 0.6827, 0.005);
  EXPECT_NE(v.back(), 99.0f);
}

TEST(GeneratorFillNormal, SameSeedSameValuesAndTheEngineAdvances) {
  hg::Generator a(3), b(3);
  std::vector<float> x(101), y(101);
  a.fill_normal(x.data(), 101);
  b.fill_normal(y.data(), 101);
  EXPECT_EQ(x, y);
  a.fill_normal(x.data(), 101);  // 51 draws later: new values
  EXPECT_NE(x, y);
  EXPECT_EQ(a.state(), [&] {
    for (int i = 0; i < 51; ++i) b.next_u64();
    return b.state();
  }());
}

}  // namespace
