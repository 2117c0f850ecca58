// RandAugment: timm's spec strings, its level-to-argument functions (the increasing-severity ops),
// magnitude noise, the op draw, and ColorJitter; exact pixels where the result is known.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <set>
#include <string>

#include "data/color_jitter.h"
#include "data/rand_augment.h"
#include "temp_dir.h"

using namespace hg::data;

// An image's pixels as a set key (a std::set of byte vectors: GCC 12 warned, falsely, that its
// memcmp read past the maximum object size, -Wstringop-overread, in -march=native builds).
namespace {
std::string pixel_key(const std::vector<uint8_t>& pixels) { return {pixels.begin(), pixels.end()}; }
}  // namespace

TEST(RandAugment, ParsesTimmSpecs) {
  RandAugmentSpec s = parse_rand_augment("rand-m9-mstd0.5-inc1");
  EXPECT_EQ(s.magnitude, 9);
  EXPECT_EQ(s.magnitude_std, 0.5);
  EXPECT_TRUE(s.increasing);
  EXPECT_EQ(s.num_layers, 2);  // defaults
  EXPECT_EQ(s.prob, 0.5);
  EXPECT_EQ(s.magnitude_max, 10);
  s = parse_rand_augment("rand-n3-p1.0-mmax12-m7-inc0");
  EXPECT_EQ(s.num_layers, 3);
  EXPECT_EQ(s.prob, 1.0);
  EXPECT_EQ(s.magnitude_max, 12);
  EXPECT_EQ(s.magnitude, 7);
  EXPECT_FALSE(s.increasing);
  EXPECT_TRUE(std::isinf(parse_rand_augment("rand-mstd101").magnitude_std));  // > 100: uniform
  // timm bounds magnitudes by `magnitude_max or 10`: mmax0 is the default bound, not 0 (which
  // would clamp every magnitude to 0, i.e. the ops at their weakest)
  EXPECT_EQ(parse_rand_augment("rand-m9-mmax0").magnitude_max, 10);
  EXPECT_EQ(parse_rand_augment("rand").magnitude, 10);
  EXPECT_EQ(parse_rand_augment("rand-m9-w").magnitude, 9);  // a section without a number is ignored
  for (const char* bad :
       {"v0", "original", "augmix-m5", "rand-x5", "rand-m9.5", "rand-p2", "rand-tweights"})
    EXPECT_THROW(parse_rand_augment(bad), hg::Error) << bad;
  // n is bounded (rand-m9-n100000000 held a worker in one image, out of a stop signal's reach)
  EXPECT_EQ(parse_rand_augment("rand-m9-n100").num_layers, 100);
  try {
    parse_rand_augment("rand-m9-n100000000");
    ADD_FAILURE();
  } catch (const hg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("n (ops per image) must be in [0, 100], got 100000000"),
              std::string::npos)
        << e.what();
  }
  try {
    parse_rand_augment("rand-q3");
    ADD_FAILURE();
  } catch (const hg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("q3"), std::string::npos) << e.what();
  }
}

TEST(RandAugment, OpSetsAreTimms) {
  const auto plain = rand_augment_ops(false), inc = rand_augment_ops(true);
  ASSERT_EQ(plain.size(), 15u);
  ASSERT_EQ(inc.size(), 15u);
  EXPECT_STREQ(aug_op_name(plain[4]), "Posterize");
  EXPECT_STREQ(aug_op_name(inc[4]), "PosterizeIncreasing");
  EXPECT_STREQ(aug_op_name(inc[5]), "SolarizeIncreasing");
  EXPECT_STREQ(aug_op_name(inc[10]), "SharpnessIncreasing");
  EXPECT_STREQ(aug_op_name(inc[14]), "TranslateYRel");
}

TEST(RandAugment, LevelToArgumentAtM9) {
  AugmentParams p;
  hg::Generator gen(1);
  auto arg = [&](AugOp op) { return aug_op_argument(op, 9.0, p, gen); };
  EXPECT_EQ(arg(AugOp::Posterize), 3);            // int(0.9 * 4)
  EXPECT_EQ(arg(AugOp::PosterizeIncreasing), 1);  // 4 - 3: fewer bits as M grows
  EXPECT_EQ(arg(AugOp::Solarize), 230);           // int(0.9 * 256)
  EXPECT_EQ(arg(AugOp::SolarizeIncreasing), 26);  // 256 - 230: lower threshold as M grows
  EXPECT_EQ(arg(AugOp::SolarizeAdd), 99);         // int(0.9 * 110)
  EXPECT_DOUBLE_EQ(arg(AugOp::Color), 0.9 * 1.8 + 0.1);
  EXPECT_EQ(aug_op_argument(AugOp::Posterize, 10, p, gen), 4);
  EXPECT_EQ(aug_op_argument(AugOp::SolarizeIncreasing, 0, p, gen), 256);  // M 0: no change
  // Signed ops: both signs, magnitude fixed.
  std::set<double> rot, shear, trans, inc;
  for (int i = 0; i < 64; ++i) {
    rot.insert(arg(AugOp::Rotate));
    shear.insert(arg(AugOp::ShearX));
    trans.insert(arg(AugOp::TranslateXRel));
    inc.insert(arg(AugOp::ContrastIncreasing));
  }
  EXPECT_EQ(rot, (std::set<double>{-27.0, 27.0}));
  EXPECT_EQ(shear, (std::set<double>{-0.9 * 0.3, 0.9 * 0.3}));
  EXPECT_EQ(trans, (std::set<double>{-0.9 * 0.45, 0.9 * 0.45}));
  EXPECT_EQ(inc, (std::set<double>{1.0 - 0.9 * 0.9, 1.0 + 0.9 * 0.9}));
  std::set<double> big;  // beyond the range the factor is kept >= 0.1
  for (int i = 0; i < 32; ++i) big.insert(aug_op_argument(AugOp::BrightnessIncreasing, 20, p, gen));
  EXPECT_EQ(big, (std::set<double>{0.1, 2.8}));
}

TEST(RandAugment, MagnitudeNoise) {
  AugmentParams p;
  hg::Generator gen(2);
  RandAugment fixed(parse_rand_augment("rand-m9"), p);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(fixed.draw_magnitude(gen), 9.0);
  RandAugment noisy(parse_rand_augment("rand-m9-mstd0.5"), p);
  double sum = 0, sq = 0, hi = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const double m = noisy.draw_magnitude(gen);
    sum += m;
    sq += m * m;
    hi = std::max(hi, m);
  }
  const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  EXPECT_NEAR(mean, 9.0, 0.02);  // clamping at 10 cuts only the far tail (2 sd)
  EXPECT_NEAR(sd, 0.49, 0.02);
  EXPECT_LE(hi, 10.0);
  RandAugment uniform(parse_rand_augment("rand-m8-mstd200"), p);
  sum = 0;
  for (int i = 0; i < n; ++i) {
    const double m = uniform.draw_magnitude(gen);
    ASSERT_GE(m, 0.0);
    ASSERT_LT(m, 8.0);
    sum += m;
  }
  EXPECT_NEAR(sum / n, 4.0, 0.08);
}

TEST(RandAugment, OpsAtTheirArguments) {
  // apply_aug_op = the image op at aug_op_argument's value (same generator draws).
  const Image img = hg::test::random_image(9, 11, 3, 4);
  AugmentParams p;
  p.interp = Interp::bilinear;
  p.fill = {1, 2, 3};
  hg::Generator g1(3), g2(3);
  EXPECT_EQ(apply_aug_op(AugOp::PosterizeIncreasing, img, 9, p, g1).pixels,
            posterize(img, 1).pixels);
  EXPECT_EQ(apply_aug_op(AugOp::SolarizeIncreasing, img, 9, p, g1).pixels,
            solarize(img, 26).pixels);
  const double deg = aug_op_argument(AugOp::Rotate, 9, p, g2);
  EXPECT_EQ(apply_aug_op(AugOp::Rotate, img, 9, p, g1).pixels,
            rotate(img, deg, Interp::bilinear, p.fill).pixels);
  const double pct = aug_op_argument(AugOp::TranslateYRel, 10, p, g2);  // +-0.45 of the height
  EXPECT_EQ(apply_aug_op(AugOp::TranslateYRel, img, 10, p, g1).pixels,
            translate_y(img, pct * 9, Interp::bilinear, p.fill).pixels);
}

TEST(RandAugment, PosterizeBeyondItsRangeAsTimmAndPil) {
  // m above 10 (with mmax, or mstd's draws) takes Posterize past 8 bits and PosterizeIncreasing
  // below 0: timm keeps the image at 8 bits or more, PIL's posterize keeps no bit below 1 (black).
  // No error mid-run, at any magnitude.
  const Image img = hg::test::random_image(7, 5, 3, 6);
  AugmentParams p;
  hg::Generator g(1);
  EXPECT_EQ(aug_op_argument(AugOp::Posterize, 30, p, g), 12);
  EXPECT_EQ(apply_aug_op(AugOp::Posterize, img, 30, p, g).pixels, img.pixels);
  EXPECT_EQ(aug_op_argument(AugOp::PosterizeIncreasing, 20, p, g), -4);
  const Image black = apply_aug_op(AugOp::PosterizeIncreasing, img, 20, p, g);
  EXPECT_EQ(black.pixels, std::vector<uint8_t>(img.pixels.size(), 0));
  for (const AugOp op : {AugOp::Posterize, AugOp::PosterizeIncreasing, AugOp::Solarize,
                         AugOp::SolarizeIncreasing, AugOp::SolarizeAdd})
    EXPECT_NO_THROW(apply_aug_op(op, img, 1e300, p, g)) << aug_op_name(op);
}

TEST(RandAugment, NoOpsOrZeroProbabilityLeaveTheImage) {
  const Image img = hg::test::random_image(8, 8, 3, 5);
  hg::Generator gen(4);
  EXPECT_EQ(RandAugment(parse_rand_augment("rand-n0"), {}).apply(img, gen).pixels, img.pixels);
  EXPECT_EQ(RandAugment(parse_rand_augment("rand-m9-n4-p0"), {}).apply(img, gen).pixels,
            img.pixels);
  // M 0 of the increasing set: the identity except AutoContrast, Invert and PosterizeIncreasing
  // (4 bits kept at M 0); Equalize of 64 pixels is the identity too (its step is 0).
  const RandAugment zero(parse_rand_augment("rand-m0-n1-p1.0-inc1"), {});
  int same = 0;
  for (int i = 0; i < 300; ++i) same += zero.apply(img, gen).pixels == img.pixels;
  EXPECT_NEAR(same / 300.0, 12.0 / 15.0, 0.08);
}

TEST(RandAugment, SameSeedSameImageAndOpsVary) {
  const Image img = hg::test::random_image(16, 16, 3, 6);
  const RandAugment ra(parse_rand_augment("rand-m9-mstd0.5-inc1"), {});
  std::set<std::string> outputs;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    hg::Generator a(seed), b(seed);
    const Image x = ra.apply(img, a);
    EXPECT_EQ(x.pixels, ra.apply(img, b).pixels) << seed;
    outputs.insert(pixel_key(x.pixels));
  }
  EXPECT_GT(outputs.size(), 25u);  // 2 ops of 15 at p 0.5 with random signs: mostly distinct
}

TEST(ColorJitter, FactorsInRangeAndOffAtZero) {
  const Image img = hg::test::random_image(6, 6, 3, 7, 40, 200);
  hg::Generator gen(5);
  EXPECT_EQ(ColorJitter(0, 0, 0).apply(img, gen).pixels, img.pixels);
  EXPECT_FALSE(ColorJitter(0, 0, 0).active());
  // brightness only: out = trunc(v * f), f in [0.6, 1.4]; recover f bounds from the pixels
  const ColorJitter b(0.4, 0, 0);
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    const Image o = b.apply(img, gen);
    seen.insert(pixel_key(o.pixels));
    for (size_t k = 0; k < img.pixels.size(); ++k) {
      ASSERT_GE(o.pixels[k], std::floor(img.pixels[k] * 0.6) - 1);
      ASSERT_LE(o.pixels[k], std::min(255.0, img.pixels[k] * 1.4));
    }
  }
  EXPECT_GT(seen.size(), 40u);
  EXPECT_THROW(ColorJitter(-0.1, 0, 0), hg::Error);
}

// timm's color_jitter as a list: [brightness, contrast, saturation] or [..., hue] (a YAML list had
// no meaning here). A hue-only jitter gives adjust_hue at some shift within the strength, drawn
// per image; the strengths of one number or a list map as timm's transforms_imagenet_train does.
TEST(ColorJitter, TimmsListWithHue) {
  EXPECT_EQ(color_jitter_strengths({0.4}), (std::array<double, 4>{0.4, 0.4, 0.4, 0}));
  EXPECT_EQ(color_jitter_strengths({0.1, 0.2, 0.3}), (std::array<double, 4>{0.1, 0.2, 0.3, 0}));
  EXPECT_EQ(color_jitter_strengths({0.1, 0.2, 0.3, 0.05}),
            (std::array<double, 4>{0.1, 0.2, 0.3, 0.05}));
  EXPECT_THROW(color_jitter_strengths({0.1, 0.2}), hg::Error);
  EXPECT_THROW(ColorJitter(0, 0, 0, 0.6), hg::Error);  // torchvision's bound: 0.5

  const Image img = hg::test::random_image(6, 6, 3, 8, 20, 230);
  const ColorJitter hue(0, 0, 0, 0.2);
  EXPECT_TRUE(hue.active());
  hg::Generator gen(3);
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    const Image o = hue.apply(img, gen);
    seen.insert(pixel_key(o.pixels));
    bool shifted_within = false;  // by trunc(f * 255) for some f in [-0.2, 0.2]: -51 .. 51
    for (int shift = -51; shift <= 51 && !shifted_within; ++shift) {
      const double f = (shift + (shift > 0 ? 0.5 : shift < 0 ? -0.5 : 0.0)) / 255.0;
      shifted_within = adjust_hue(img, f).pixels == o.pixels;
    }
    EXPECT_TRUE(shifted_within) << "draw " << i;
  }
  EXPECT_GT(seen.size(), 10u);
}
