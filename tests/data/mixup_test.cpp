// Mixup / CutMix (timm's Mixup) and random erasing (timm's RandomErasing): with a fixed seed, each
// output pixel and target is checked against the formula applied to the draws the op reports.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "data/mixup.h"
#include "data/random_erasing.h"

using namespace hg::data;

namespace {
constexpr int64_t N = 6, H = 5, W = 7, C = 2, K = 4;

std::vector<float> batch_images() {  // image i: value 100 i + pixel index, distinct everywhere
  std::vector<float> x(size_t(N * H * W * C));
  for (size_t k = 0; k < x.size(); ++k)
    x[k] = static_cast<float>(100 * (k / (H * W * C)) + k % (H * W * C));
  return x;
}
const std::vector<int64_t> kLabels = {0, 1, 2, 3, 1, 2};

// The target formula: lam * smooth(y_i) + (1 - lam) * smooth(y_{N-1-i}).
float expected_target(int64_t i, int64_t k, double lam, double s) {
  const double off = s / K, on = 1 - s + off;
  auto smooth = [&](int64_t y) { return y == k ? on : off; };
  return static_cast<float>(lam * smooth(kLabels[size_t(i)]) +
                            (1 - lam) * smooth(kLabels[size_t(N - 1 - i)]));
}

void check_targets(const std::vector<float>& t, const std::vector<MixDraw>& draws, double s) {
  for (int64_t i = 0; i < N; ++i) {
    double sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      EXPECT_NEAR(t[size_t(i * K + k)], expected_target(i, k, draws[size_t(i)].lam, s), 1e-7)
          << i << "," << k;
      sum += t[size_t(i * K + k)];
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
}
}  // namespace

TEST(Mixup, BatchMixupBlendsWithTheFlippedBatch) {
  MixupOptions o;
  o.mixup_alpha = 0.8;
  o.num_classes = K;
  o.label_smoothing = 0.1;
  const Mixup m(o);
  std::vector<float> x = batch_images(), t(size_t(N * K));
  const std::vector<float> x0 = x;
  hg::Generator gen(11);
  const auto draws = m.apply(x.data(), N, H, W, C, kLabels.data(), t.data(), gen);
  const double lam = draws[0].lam;
  ASSERT_GT(lam, 0.0);
  ASSERT_LT(lam, 1.0);
  const int64_t per = H * W * C;
  for (int64_t i = 0; i < N; ++i) {
    EXPECT_EQ(draws[size_t(i)].lam, lam);
    EXPECT_FALSE(draws[size_t(i)].cutmix);
    for (int64_t k = 0; k < per; ++k) {
      const float want = x0[size_t(i * per + k)] * static_cast<float>(lam) +
                         x0[size_t((N - 1 - i) * per + k)] * (1.0f - static_cast<float>(lam));
      ASSERT_EQ(x[size_t(i * per + k)], want) << i << "," << k;
    }
  }
  check_targets(t, draws, 0.1);
}

TEST(Mixup, BatchCutmixCopiesABoxAndCorrectsLam) {
  MixupOptions o;
  o.cutmix_alpha = 1.0;
  o.num_classes = K;
  const Mixup m(o);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<float> x = batch_images(), t(size_t(N * K));
    const std::vector<float> x0 = x;
    hg::Generator gen(seed);
    const auto draws = m.apply(x.data(), N, H, W, C, kLabels.data(), t.data(), gen);
    const MixDraw& d = draws[0];
    ASSERT_TRUE(d.cutmix);
    ASSERT_TRUE(0 <= d.y0 && d.y0 <= d.y1 && d.y1 <= H && 0 <= d.x0 && d.x0 <= d.x1 && d.x1 <= W);
    EXPECT_DOUBLE_EQ(d.lam, 1.0 - double((d.y1 - d.y0) * (d.x1 - d.x0)) / double(H * W));
    for (int64_t i = 0; i < N; ++i)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t xx = 0; xx < W; ++xx)
          for (int64_t c = 0; c < C; ++c) {
            const bool inside = y >= d.y0 && y < d.y1 && xx >= d.x0 && xx < d.x1;
            const int64_t src = inside ? N - 1 - i : i;
            ASSERT_EQ(x[size_t(((i * H + y) * W + xx) * C + c)],
                      x0[size_t(((src * H + y) * W + xx) * C + c)]);
          }
    check_targets(t, draws, o.label_smoothing);
  }
}

TEST(Mixup, PairAndElemModes) {
  MixupOptions o;
  o.mixup_alpha = 1.0;
  o.cutmix_alpha = 1.0;
  o.num_classes = K;
  o.mode = "pair";
  std::vector<float> x = batch_images(), t(size_t(N * K));
  hg::Generator gen(5);
  auto draws = Mixup(o).apply(x.data(), N, H, W, C, kLabels.data(), t.data(), gen);
  for (int64_t i = 0; i < N / 2; ++i) {  // a pair shares its draw
    EXPECT_EQ(draws[size_t(i)].lam, draws[size_t(N - 1 - i)].lam);
    EXPECT_EQ(draws[size_t(i)].cutmix, draws[size_t(N - 1 - i)].cutmix);
  }
  check_targets(t, draws, o.label_smoothing);
  o.mode = "elem";
  int cutmixes = 0, distinct = 0;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    x = batch_images();
    hg::Generator g(seed);
    draws = Mixup(o).apply(x.data(), N, H, W, C, kLabels.data(), t.data(), g);
    check_targets(t, draws, o.label_smoothing);
    for (const auto& d : draws) cutmixes += d.cutmix;
    distinct += draws[0].lam != draws[1].lam;
  }
  EXPECT_NEAR(cutmixes / 300.0, 0.5, 0.1);  // switch_prob 0.5
  EXPECT_GT(distinct, 40);                  // per-image draws
}

// Every pixel of every mode (batch, pair, elem; mixup and cutmix drawn) against its draw applied to
// the unmixed images i and N - 1 - i: images are mixed pairwise in place, so a pair with two draws
// (elem) must still read its partner's unmixed pixels.
TEST(Mixup, EveryModeMixesEachImageWithItsUnmixedPartner) {
  MixupOptions o;
  o.mixup_alpha = 0.8;
  o.cutmix_alpha = 1.0;
  o.num_classes = K;
  const int64_t per = H * W * C;
  for (const char* mode : {"batch", "pair", "elem"}) {
    o.mode = mode;
    int mixed = 0, cut = 0;
    for (uint64_t seed = 0; seed < 12; ++seed) {
      std::vector<float> x = batch_images(), t(size_t(N * K));
      const std::vector<float> x0 = x;
      hg::Generator gen(seed);
      const auto draws = Mixup(o).apply(x.data(), N, H, W, C, kLabels.data(), t.data(), gen);
      for (int64_t i = 0; i < N; ++i) {
        const MixDraw& d = draws[size_t(i)];
        mixed += !d.cutmix && d.lam < 1.0;
        cut += d.cutmix && d.lam < 1.0;
        const float* own = x0.data() + i * per;
        const float* other = x0.data() + (N - 1 - i) * per;
        for (int64_t k = 0; k < per; ++k) {
          const int64_t y = k / (W * C), xx = (k / C) % W;
          float want = own[k];
          if (d.cutmix && y >= d.y0 && y < d.y1 && xx >= d.x0 && xx < d.x1) want = other[k];
          if (!d.cutmix && d.lam < 1.0)
            want =
                own[k] * static_cast<float>(d.lam) + other[k] * (1.0f - static_cast<float>(d.lam));
          ASSERT_EQ(x[size_t(i * per + k)], want)
              << mode << " seed " << seed << " image " << i << " value " << k;
        }
      }
    }
    EXPECT_GT(mixed, 0) << mode;
    EXPECT_GT(cut, 0) << mode;
  }
}

TEST(Mixup, ProbabilityZeroOrDisabledGivesSmoothedOneHot) {
  MixupOptions o;
  o.mixup_alpha = 0.8;
  o.cutmix_alpha = 1.0;
  o.num_classes = K;
  o.label_smoothing = 0.2;
  std::vector<float> x = batch_images(), t(size_t(N * K));
  const std::vector<float> x0 = x;
  hg::Generator gen(1);
  MixupOptions never = o;
  never.prob = 0.0;
  never.mode = "elem";
  auto draws = Mixup(never).apply(x.data(), N, H, W, C, kLabels.data(), t.data(), gen);
  EXPECT_EQ(x, x0);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t k = 0; k < K; ++k)
      EXPECT_FLOAT_EQ(t[size_t(i * K + k)], k == kLabels[size_t(i)] ? 1 - 0.2 + 0.05 : 0.05);
  draws = Mixup(o).apply(x.data(), N, H, W, C, kLabels.data(), t.data(), gen, /*enabled=*/false);
  EXPECT_EQ(x, x0);
  check_targets(t, draws, 0.2);
}

TEST(Mixup, MinMaxBoxesAndErrors) {
  MixupOptions o;
  o.cutmix_minmax = std::array<double, 2>{0.2, 0.8};
  o.num_classes = K;
  const Mixup m(o);
  EXPECT_TRUE(m.active());  // minmax alone turns cutmix on
  for (uint64_t seed = 0; seed < 30; ++seed) {
    std::vector<float> x(size_t(N * 10 * 10), 1.0f), t(size_t(N * K));
    hg::Generator gen(seed);
    const MixDraw d = m.apply(x.data(), N, 10, 10, 1, kLabels.data(), t.data(), gen)[0];
    ASSERT_TRUE(d.cutmix);
    EXPECT_GE(d.y1 - d.y0, 2);  // [int(10 * 0.2), int(10 * 0.8))
    EXPECT_LT(d.y1 - d.y0, 8);
    EXPECT_GE(d.x1 - d.x0, 2);
    EXPECT_LT(d.x1 - d.x0, 8);
    EXPECT_LE(d.y1, 10);
    EXPECT_LE(d.x1, 10);
  }
  std::vector<float> x(size_t(5 * H * W * C)), t(size_t(5 * K));
  hg::Generator gen(0);
  EXPECT_THROW(m.apply(x.data(), 5, H, W, C, kLabels.data(), t.data(), gen),
               hg::Error);  // odd batch
  const std::vector<int64_t> bad = {0, 1, 2, 3, 4, 0};
  x.resize(size_t(N * H * W * C));
  t.resize(size_t(N * K));
  EXPECT_THROW(m.apply(x.data(), N, H, W, C, bad.data(), t.data(), gen),
               hg::Error);  // label 4 of 4 classes
  MixupOptions wrong = o;
  wrong.mode = "pairs";
  EXPECT_THROW(Mixup{wrong}, hg::Error);
}

TEST(Mixup, BetaSamplesHaveTheBetaMoments) {
  hg::Generator gen(3);
  const double a = 0.8;
  double sum = 0, sq = 0;
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    const double v = sample_beta(a, gen);
    ASSERT_GE(v, 0.0);
    ASSERT_LE(v, 1.0);
    sum += v;
    sq += v * v;
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.01);
  EXPECT_NEAR(var, 1.0 / (4 * (2 * a + 1)), 0.004);  // Beta(a, a): 1 / (4 (2a + 1))
}

TEST(RandomErasing, ErasesBoxesInsideTheImage) {
  const int64_t h = 20, w = 24, c = 3;
  for (const char* mode : {"const", "rand", "pixel"}) {
    RandomErasingOptions o;
    o.probability = 1.0;
    o.mode = mode;
    o.max_count = 3;
    const RandomErasing re(o);
    int total_boxes = 0;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      std::vector<float> img(size_t(h * w * c), 7.0f);  // no normal draw is exactly 7
      hg::Generator gen(seed);
      const auto boxes = re.apply(img.data(), h, w, c, gen);
      ASSERT_GE(boxes.size(), 1u);
      ASSERT_LE(boxes.size(), 3u);
      total_boxes += static_cast<int>(boxes.size());
      std::vector<int> covered(size_t(h * w), 0);
      for (const EraseBox& b : boxes) {
        ASSERT_TRUE(b.top >= 0 && b.left >= 0 && b.top + b.h <= h && b.left + b.w <= w);
        const double frac = double(b.h * b.w) / double(h * w) * double(boxes.size());
        EXPECT_GT(frac, 0.0);
        EXPECT_LT(frac, 0.45);  // max_area 1/3 of the image split over the boxes, plus rounding
        for (int64_t y = b.top; y < b.top + b.h; ++y)
          for (int64_t x = b.left; x < b.left + b.w; ++x) covered[size_t(y * w + x)] = 1;
      }
      for (int64_t p = 0; p < h * w; ++p)
        for (int64_t k = 0; k < c; ++k) {
          const float v = img[size_t(p * c + k)];
          if (!covered[size_t(p)])
            ASSERT_EQ(v, 7.0f);
          else if (std::string(mode) == "const")
            ASSERT_EQ(v, 0.0f);
          else
            ASSERT_NE(v, 7.0f);
        }
      if (std::string(mode) == "rand" && boxes.size() == 1) {  // one colour per channel for the box
        const EraseBox& b = boxes[0];
        const float* first = img.data() + (b.top * w + b.left) * c;
        for (int64_t y = b.top; y < b.top + b.h; ++y)
          for (int64_t x = b.left; x < b.left + b.w; ++x)
            for (int64_t k = 0; k < c; ++k) ASSERT_EQ(img[size_t((y * w + x) * c + k)], first[k]);
      }
    }
    EXPECT_GT(total_boxes, 20);  // counts 1..3 drawn
  }
}

TEST(RandomErasing, PixelFillIsStandardNormalAndProbabilityHolds) {
  RandomErasingOptions o;
  o.probability = 0.25;
  const RandomErasing re(o);
  int erased = 0;
  double sum = 0, sq = 0;
  int64_t n = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    std::vector<float> img(size_t(32 * 32 * 3), 7.0f);
    hg::Generator gen(seed);
    erased += !re.apply(img.data(), 32, 32, 3, gen).empty();
    for (float v : img)
      if (v != 7.0f) sum += v, sq += double(v) * v, ++n;
  }
  EXPECT_NEAR(erased / 400.0, 0.25, 0.06);
  ASSERT_GT(n, 1000);
  EXPECT_NEAR(sum / double(n), 0.0, 0.03);
  EXPECT_NEAR(sq / double(n), 1.0, 0.05);
  o.mode = "gauss";
  EXPECT_THROW(RandomErasing{o}, hg::Error);
}

// A tiny alpha (mixup 1e-5) makes both gamma draws underflow to 0, and sample_beta returned 0.5,
// the strongest mix, every time; Beta(a, a) then lies at 0 or 1 (almost no mixing), as numpy's beta
// gives timm. The draws are now 0 or 1, about half each.
TEST(Mixup, BetaOfATinyAlphaIsZeroOrOneNotAnEvenSplit) {
  hg::Generator gen(5);
  int ones = 0;
  const int n = 2000;
  for (int i = 0; i < n; ++i) {
    const double v = sample_beta(1e-5, gen);
    ASSERT_TRUE(v < 1e-3 || v > 1 - 1e-3) << v;
    ones += v > 0.5;
  }
  EXPECT_NEAR(double(ones) / n, 0.5, 0.05);
}
