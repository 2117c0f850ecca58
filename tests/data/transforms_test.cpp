// Tests of the transforms: output shapes, normalisation, exact copies when nothing is rescaled, flips,
// bilinear resampling of a ramp, and the random-resized-crop box.
#include <gtest/gtest.h>

#include <tuple>

#include <cmath>

#include "data/transforms.h"
#include "temp_dir.h"

using hg::data::Image;
using hg::data::Transform;
using hg::data::TransformOptions;

namespace {
TransformOptions gray_options(int64_t size, bool train) {
  TransformOptions o;
  o.img_size = size;
  o.train = train;
  o.mean = {0.3};
  o.std = {0.4};
  return o;
}
float normalised(uint8_t p, double mean, double std) { return static_cast<float>((p / 255.0 - mean) / std); }
}  // namespace

TEST(Transforms, EvalAtNativeSizeCopiesAndNormalises) {
  Image img = hg::test::random_image(28, 28, 1, 21);
  TransformOptions o = gray_options(28, false);
  o.crop_pct = 1.0;
  Transform t(o);
  ASSERT_EQ(t.output_numel(), 28 * 28);
  std::vector<float> out(size_t(t.output_numel()), NAN);  // poisoned
  hg::Generator gen(1);
  t.apply(img, gen, out.data());
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], normalised(img.pixels[i], 0.3, 0.4), 1e-5) << i;
}

TEST(Transforms, ConstantImageGivesNormalisedConstantPerChannel) {
  // Any crop and filter of a constant image is that constant: checks shapes and per-channel mean/std.
  Image img{30, 45, 3, {}};
  for (int64_t p = 0; p < 30 * 45; ++p) img.pixels.insert(img.pixels.end(), {200, 50, 120});
  for (bool train : {false, true}) {
    TransformOptions o;
    o.img_size = 16;
    o.train = train;
    Transform t(o);
    std::vector<float> out(size_t(t.output_numel()), NAN);
    ASSERT_EQ(out.size(), 16u * 16u * 3u);
    hg::Generator gen(5);
    t.apply(img, gen, out.data());
    for (size_t p = 0; p < 16 * 16; ++p)
      for (size_t c = 0; c < 3; ++c)
        ASSERT_NEAR(out[p * 3 + c], normalised(img.pixels[c], o.mean[c], o.std[c]), 1e-5) << train << p << c;
  }
}

TEST(Transforms, FlipMirrorsColumns) {
  Image img = hg::test::random_image(12, 12, 1, 22);
  TransformOptions o = gray_options(12, true);
  o.scale = {1.0, 1.0};
  o.ratio = {1.0, 1.0};
  o.hflip = 1.0;  // always flip; the crop is the whole image
  Transform t(o);
  std::vector<float> out(144, NAN);
  hg::Generator gen(3);
  t.apply(img, gen, out.data());
  for (int64_t y = 0; y < 12; ++y)
    for (int64_t x = 0; x < 12; ++x)
      ASSERT_NEAR(out[size_t(y * 12 + x)], normalised(img.at(y, 11 - x, 0), 0.3, 0.4), 1e-5);
}

TEST(Transforms, BilinearReproducesARamp) {
  // A linear ramp v(u) = 3 (u - 0.5) + 10 in pixel-center coordinates stays linear under a symmetric
  // filter, so interior outputs equal v at their centers, when shrinking and when enlarging. (Exactly
  // so for integer shrink factors and for any enlargement; other factors leave a tiny sampling error.)
  for (auto [in_w, out_w] : {std::pair<int64_t, int64_t>{64, 32}, {48, 16}, {16, 40}}) {
    Image img{3, in_w, 1, {}};
    for (int64_t y = 0; y < 3; ++y)
      for (int64_t x = 0; x < in_w; ++x) img.pixels.push_back(static_cast<uint8_t>(x * 3 + 10 + (x * 3 + 10 > 255)));
    std::vector<float> out(size_t(3 * out_w), NAN);
    hg::data::resample_bilinear(img, {0, 0, double(in_w), 3}, 3, out_w, false, out.data());
    const double scale = double(in_w) / double(out_w);
    int checked = 0;
    for (int64_t ox = 0; ox < out_w; ++ox) {
      const double center = (ox + 0.5) * scale;
      if (center - 2 * std::max(scale, 1.0) < 0 || center + 2 * std::max(scale, 1.0) > double(in_w)) continue;
      ++checked;
      for (int64_t y = 0; y < 3; ++y) ASSERT_NEAR(out[size_t(y * out_w + ox)], 3 * (center - 0.5) + 10, 1e-3) << ox;
    }
    EXPECT_GT(checked, 4);
  }
}

TEST(Transforms, CenterCropBox) {
  auto b = hg::data::center_crop_box(28, 28, 28, 1.0);
  EXPECT_DOUBLE_EQ(b.x, 0);
  EXPECT_DOUBLE_EQ(b.w, 28);
  // 300x400 (h x w), 224 at 0.875: shorter side -> 256, width -> 341; crop top 16, left round(58.5) = 58.
  b = hg::data::center_crop_box(300, 400, 224, 0.875);
  EXPECT_NEAR(b.y, 16 * 300.0 / 256, 1e-9);
  EXPECT_NEAR(b.x, 58 * 400.0 / 341, 1e-9);
  EXPECT_NEAR(b.h, 224 * 300.0 / 256, 1e-9);
  EXPECT_NEAR(b.w, 224 * 400.0 / 341, 1e-9);
}

TEST(Transforms, RandomResizedCropBox) {
  hg::Generator gen(7);
  int in_scale = 0;
  for (int i = 0; i < 300; ++i) {
    auto b = hg::data::random_resized_crop_box(50, 80, {0.08, 1.0}, {3.0 / 4, 4.0 / 3}, gen);
    ASSERT_GE(b.x, 0);
    ASSERT_GE(b.y, 0);
    ASSERT_GT(b.w, 0);
    ASSERT_GT(b.h, 0);
    ASSERT_LE(b.x + b.w, 80);
    ASSERT_LE(b.y + b.h, 50);
    ASSERT_EQ(b.x, std::floor(b.x));  // integer boxes, as torchvision
    const double frac = b.w * b.h / (50.0 * 80.0), aspect = b.w / b.h;
    in_scale += frac > 0.06 && frac < 1.02 && aspect > 0.7 && aspect < 1.4;
  }
  EXPECT_GT(in_scale, 280);
  // Same seed, same boxes; scale [1, 1] with ratio [1, 1] on a square image is the whole image.
  hg::Generator g1(9), g2(9);
  for (int i = 0; i < 20; ++i) {
    auto a = hg::data::random_resized_crop_box(60, 40, {0.2, 0.9}, {0.5, 2.0}, g1);
    auto b = hg::data::random_resized_crop_box(60, 40, {0.2, 0.9}, {0.5, 2.0}, g2);
    ASSERT_EQ(a.x, b.x);
    ASSERT_EQ(a.w, b.w);
  }
  auto whole = hg::data::random_resized_crop_box(28, 28, {1.0, 1.0}, {1.0, 1.0}, g1);
  EXPECT_EQ(whole.w, 28);
  EXPECT_EQ(whole.h, 28);
  // Wide image, impossible aspect: the centered fallback clamps to the ratio bound.
  auto fallback = hg::data::random_resized_crop_box(10, 100, {1.0, 1.0}, {1.0, 2.0}, g1);
  EXPECT_EQ(fallback.h, 10);
  EXPECT_EQ(fallback.w, 20);
  EXPECT_EQ(fallback.x, 40);
  // A ratio bound more than twice the image's side rounded the fallback's other side to 0 pixels
  // ("resample: bad box 32x0" mid-epoch): it keeps at least one pixel, as a crop must.
  for (const auto& [h, w, lo, hi] : std::vector<std::tuple<int64_t, int64_t, double, double>>{
           {32, 32, 100.0, 100.0}, {32, 32, 0.01, 0.01}, {1, 3000, 5000.0, 6000.0}}) {
    const auto thin = hg::data::random_resized_crop_box(h, w, {1.0, 1.0}, {lo, hi}, g1);
    EXPECT_GE(thin.w, 1) << h << "x" << w << " ratio " << lo;
    EXPECT_GE(thin.h, 1) << h << "x" << w << " ratio " << lo;
    EXPECT_LE(thin.x + thin.w, w);
    EXPECT_LE(thin.y + thin.h, h);
  }
}

// timm's evaluation with crop_pct > 1: Resize(shorter side -> floor(img_size / crop_pct)) makes the
// image smaller than the crop, and torchvision's CenterCrop pads it with 0 ((side - n) // 2 before,
// the rest after): the border is the zero pixel normalised, -mean / std, and the inside is the
// resized image (cropped along a side that stays longer than img_size).
TEST(Transforms, EvalCropPctAboveOnePadsWithTheNormalisedZeroPixel) {
  struct Case {
    int64_t h, w, S;
    double crop_pct;
    const char* interp;
    int64_t rh, rw;          // resized size
    int64_t top, left;       // padding before, of a side resized below S
    int64_t crop_y, crop_x;  // crop offset in a side resized to S or more
  };
  // 20x33 at 15 / 1.5: resized 10x16 (16.5 truncated); rows padded 2 above and 3 below, the width
  // cropped from round(0.5) = 0 (half to even). At 16 / 2: resized 8x13, padded 4 / 4 rows and
  // 1 / 2 columns. 46x18 at 12 / 1.25: resized 23x9 (floor(9.6) = 9), 1 / 2 columns padded, the
  // height cropped from round(5.5) = 6.
  for (const Case& k : {Case{20, 33, 15, 1.5, "bilinear", 10, 16, 2, 0, 0, 0},
                        Case{20, 33, 16, 2.0, "bicubic", 8, 13, 4, 1, 0, 0},
                        Case{46, 18, 12, 1.25, "bicubic", 23, 9, 0, 1, 6, 0}}) {
    SCOPED_TRACE(testing::Message()
                 << k.h << "x" << k.w << " img_size " << k.S << " crop_pct " << k.crop_pct);
    const Image img = hg::test::random_image(k.h, k.w, 3, uint64_t(k.h * 100 + k.w));
    TransformOptions o;
    o.img_size = k.S;
    o.crop_pct = k.crop_pct;
    o.interpolation = k.interp;
    const Transform t(o);
    ASSERT_EQ(t.output_numel(), k.S * k.S * 3);
    std::vector<float> out(size_t(t.output_numel()), NAN);  // poisoned
    hg::Generator gen(1);
    t.apply(img, gen, out.data());
    // The reference: the whole image resized to rh x rw (torchvision's Resize), then placed.
    std::vector<float> resized(size_t(k.rh * k.rw * 3));
    hg::data::resample(img, {0, 0, double(k.w), double(k.h)}, k.rh, k.rw, false,
                       hg::data::parse_interp(k.interp), resized.data());
    int64_t inside = 0, border = 0;
    for (int64_t y = 0; y < k.S; ++y)
      for (int64_t x = 0; x < k.S; ++x)
        for (int64_t ch = 0; ch < 3; ++ch) {
          const float got = out[size_t((y * k.S + x) * 3 + ch)];
          const int64_t ry = k.rh < k.S ? y - k.top : y + k.crop_y;
          const int64_t rx = k.rw < k.S ? x - k.left : x + k.crop_x;
          if (ry < 0 || ry >= k.rh || rx < 0 || rx >= k.rw) {
            ASSERT_EQ(got, static_cast<float>(-o.mean[size_t(ch)] / o.std[size_t(ch)]))
                << y << "," << x << "," << ch;
            ++border;
          } else {
            const double want =
                (resized[size_t((ry * k.rw + rx) * 3 + ch)] / 255.0 - o.mean[size_t(ch)]) /
                o.std[size_t(ch)];
            ASSERT_NEAR(got, want, 1e-5) << y << "," << x << "," << ch;
            ++inside;
          }
        }
    EXPECT_EQ(inside, std::min(k.rh, k.S) * std::min(k.rw, k.S) * 3);
    EXPECT_GT(border, 0);
  }
}

TEST(Transforms, CropPctMustBePositiveAndLeaveAPixel) {
  // 9: floor(8 / 9) = 0 pixels; 1e-30: floor(8 / 1e-30) = 8e30 pixels, past int64 (the resize was
  // an undefined cast, met as "resample: bad box" without crop_pct's name)
  for (double bad : {0.0, -0.5, 9.0, 1e-30, 4e-300}) {
    TransformOptions o = gray_options(8, false);
    o.crop_pct = bad;
    try {
      Transform t(o);
      ADD_FAILURE() << "crop_pct " << bad << " was taken";
    } catch (const hg::Error& e) {
      EXPECT_NE(std::string(e.what()).find("crop_pct"), std::string::npos) << e.what();
    }
  }
  TransformOptions o = gray_options(8, false);
  o.crop_pct = 8.0;  // floor(8 / 8) = 1 pixel: the image's mean colour amid the zero pixel
  EXPECT_NO_THROW(Transform{o});
  o.crop_pct = 8.0 / (1 << 30);  // the shorter side resized to 2^30 pixels: the most taken
  EXPECT_NO_THROW(Transform{o});
  EXPECT_THROW(hg::data::center_crop(8, 8, 8, 1e-30), hg::Error);
}

TEST(Transforms, BadInputsThrow) {
  TransformOptions o = gray_options(8, false);
  o.crop_pct = 0.0;
  EXPECT_THROW(Transform{o}, hg::Error);
  o = gray_options(8, false);
  o.std = {0.0};
  EXPECT_THROW(Transform{o}, hg::Error);
  Transform t(gray_options(8, false));
  Image rgb = hg::test::random_image(8, 8, 3, 1);
  std::vector<float> out(64);
  hg::Generator gen(1);
  try {
    t.apply(rgb, gen, out.data());
    ADD_FAILURE() << "expected an error";
  } catch (const hg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("3 channels"), std::string::npos) << e.what();
  }
}
