// The 8-bit ops of RandAugment / ColorJitter (data/image_ops.h): known images in, exact pixels out,
// each expected value worked out by hand from PIL's definition of the op.
#include <gtest/gtest.h>

#include <array>

#include "data/image_ops.h"
#include "temp_dir.h"

using namespace hg::data;

namespace {
Image gray(int64_t h, int64_t w, std::vector<uint8_t> px) { return Image{h, w, 1, std::move(px)}; }
Image ramp(int64_t h, int64_t w) {  // pixel (y, x) = 10 y + x + 1, distinct and known
  Image img{h, w, 1, {}};
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) img.pixels.push_back(static_cast<uint8_t>(10 * y + x + 1));
  return img;
}
const Fill kFill{7, 8, 9};
}  // namespace

TEST(ImageOps, PointOps) {
  const Image img = gray(1, 6, {0, 63, 64, 127, 128, 255});
  EXPECT_EQ(invert(img).pixels, (std::vector<uint8_t>{255, 192, 191, 128, 127, 0}));
  EXPECT_EQ(posterize(img, 2).pixels,
            (std::vector<uint8_t>{0, 0, 64, 64, 128, 192}));  // keep the top 2 bits
  EXPECT_EQ(posterize(img, 0).pixels, (std::vector<uint8_t>{0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(posterize(img, 8).pixels, img.pixels);
  EXPECT_EQ(solarize(img, 128).pixels,
            (std::vector<uint8_t>{0, 63, 64, 127, 127, 0}));  // >= 128 inverted
  EXPECT_EQ(solarize(img, 256).pixels, img.pixels);
  EXPECT_EQ(solarize_add(img, 100).pixels, (std::vector<uint8_t>{100, 163, 164, 227, 128, 255}));
  EXPECT_EQ(solarize_add(img, 200).pixels,
            (std::vector<uint8_t>{200, 255, 255, 255, 128, 255}));  // clamped
  EXPECT_THROW(posterize(img, 9), hg::Error);
}

TEST(ImageOps, AutoContrastStretchesEachChannel) {
  // Channel 0 spans [64, 192]: scale 255 / 128 (exact in binary), offset -127.5, values truncated.
  // Channel 1 is constant: unchanged. Channel 2 spans [0, 255]: unchanged.
  Image img{1, 3, 3, {64, 9, 0, 128, 9, 100, 192, 9, 255}};
  EXPECT_EQ(auto_contrast(img).pixels, (std::vector<uint8_t>{0, 9, 0, 127, 9, 100, 255, 9, 255}));
}

TEST(ImageOps, EqualizeFollowsPilsHistogramSteps) {
  // 200 pixels of 40, 310 of 80, 100 of 160: step = (610 - 100) / 255 = 2, lut = (1 + below) / 2
  // with `below` the count of smaller values: 40 -> 0, 80 -> 201 / 2 = 100, 160 -> 511 / 2 = 255.
  std::vector<uint8_t> px;
  px.insert(px.end(), 200, 40);
  px.insert(px.end(), 310, 80);
  px.insert(px.end(), 100, 160);
  const Image out = equalize(gray(10, 61, px));
  EXPECT_EQ(out.pixels[0], 0);
  EXPECT_EQ(out.pixels[200], 100);
  EXPECT_EQ(out.pixels[600], 255);
  const Image few = gray(1, 3, {5, 6, 7});  // step 0: unchanged
  EXPECT_EQ(equalize(few).pixels, few.pixels);
}

// ColorJitter's hue (timm's color_jitter [b, c, s, hue]): torchvision's adjust_hue of a PIL image,
// PIL's 8-bit HSV with the hue byte shifted. The expected pixels are that code's (F_pil.adjust_hue
// as written there) on Pillow 9.4 and numpy 1.24; the conversion also equalled Pillow's on all
// 2^24 colours at factors 0.1, -0.37 and 0.5 (checked once, off-line). Factor 0 is not the
// identity (PIL's HSV bytes lose precision: 40 -> 37 below); a negative factor wraps (-0.5: +129).
TEST(ImageOps, AdjustHueIsTorchvisionsOnPilsHsv) {
  using Rgb = std::array<uint8_t, 3>;
  const std::array<double, 4> factors{0.0, 0.1, -0.1, -0.5};
  // a pixel, then what it becomes at each factor
  const std::vector<std::vector<Rgb>> table = {
      {{200, 40, 10}, {200, 37, 10}, {200, 149, 10}, {200, 10, 91}, {10, 167, 200}},
      {{10, 200, 40}, {10, 200, 37}, {10, 200, 149}, {95, 200, 10}, {200, 10, 167}},
      {{40, 10, 200}, {37, 10, 200}, {149, 10, 200}, {10, 95, 200}, {171, 200, 10}},
      {{128, 128, 128}, {128, 128, 128}, {128, 128, 128}, {128, 128, 128}, {128, 128, 128}},
      {{255, 0, 0}, {255, 0, 0}, {255, 150, 0}, {255, 0, 144}, {0, 246, 255}},
      {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
      {{255, 255, 255}, {255, 255, 255}, {255, 255, 255}, {255, 255, 255}, {255, 255, 255}},
      {{17, 99, 230}, {17, 102, 230}, {57, 17, 230}, {17, 227, 230}, {230, 147, 17}},
      {{250, 251, 249}, {250, 251, 249}, {249, 251, 249}, {251, 251, 249}, {250, 249, 251}},
      {{3, 2, 1}, {3, 2, 1}, {3, 3, 1}, {3, 1, 1}, {1, 2, 3}},
      {{90, 180, 90}, {90, 180, 90}, {90, 180, 143}, {143, 180, 90}, {180, 90, 177}},
      {{255, 0, 255}, {252, 0, 255}, {255, 0, 108}, {102, 0, 255}, {0, 255, 0}}};
  Image img{1, int64_t(table.size()), 3, {}};
  for (const auto& row : table) img.pixels.insert(img.pixels.end(), row[0].begin(), row[0].end());
  for (size_t f = 0; f < factors.size(); ++f) {
    std::vector<uint8_t> want;
    for (const auto& row : table) want.insert(want.end(), row[f + 1].begin(), row[f + 1].end());
    EXPECT_EQ(adjust_hue(img, factors[f]).pixels, want) << "factor " << factors[f];
  }
  const Image g = gray(1, 3, {0, 100, 255});  // an "L" image: unchanged
  EXPECT_EQ(adjust_hue(g, 0.3).pixels, g.pixels);
  EXPECT_THROW(adjust_hue(img, 0.6), hg::Error);
}

TEST(ImageOps, EnhanceBlendsWithTheDegenerateImage) {
  // Luma of (200, 100, 50) = (200*19595 + 100*38470 + 50*7471 + 32768) >> 16 = 124.
  const Image rgb{1, 1, 3, {200, 100, 50}};
  EXPECT_EQ(luma(200, 100, 50), 124);
  EXPECT_EQ(adjust_color(rgb, 0.0).pixels, (std::vector<uint8_t>{124, 124, 124}));
  EXPECT_EQ(adjust_color(rgb, 0.5).pixels, (std::vector<uint8_t>{162, 112, 87}));
  EXPECT_EQ(adjust_color(rgb, 2.0).pixels, (std::vector<uint8_t>{255, 76, 0}));  // clamped
  EXPECT_EQ(adjust_color(rgb, 1.0).pixels, rgb.pixels);
  const Image g = gray(2, 2, {0, 100, 100, 201});
  EXPECT_EQ(adjust_color(g, 0.3).pixels, g.pixels);  // saturation of a gray image: nothing
  // brightness: v * f truncated; 201 * 0.5 = 100.5 -> 100; 201 * 1.5 -> 255
  EXPECT_EQ(adjust_brightness(g, 0.5).pixels, (std::vector<uint8_t>{0, 50, 50, 100}));
  EXPECT_EQ(adjust_brightness(g, 1.5).pixels, (std::vector<uint8_t>{0, 150, 150, 255}));
  // contrast: mean int(100.25 + 0.5) = 100; 100 + 0.5 (v - 100), truncated
  EXPECT_EQ(adjust_contrast(g, 0.5).pixels, (std::vector<uint8_t>{50, 100, 100, 150}));
  EXPECT_EQ(adjust_contrast(g, 0.0).pixels, (std::vector<uint8_t>{100, 100, 100, 100}));
}

TEST(ImageOps, SharpnessSmoothsTheInteriorOnly) {
  // A 3x3 image with 130 in the middle: the smoothed centre is round(5 * 130 / 13) = 50, the
  // border keeps its zeros. factor 0 -> the smoothed image; 2 -> 50 + 2 (130 - 50) = 210.
  std::vector<uint8_t> px(9, 0);
  px[4] = 130;
  const Image img = gray(3, 3, px);
  std::vector<uint8_t> want(9, 0);
  want[4] = 50;
  EXPECT_EQ(adjust_sharpness(img, 0.0).pixels, want);
  want[4] = 210;
  EXPECT_EQ(adjust_sharpness(img, 2.0).pixels, want);
  EXPECT_EQ(adjust_sharpness(img, 1.0).pixels, img.pixels);
}

TEST(ImageOps, IntegerTranslationsCopyPixelsAndFillTheRest) {
  const Image img = ramp(4, 5);
  for (Interp interp : {Interp::nearest, Interp::bilinear, Interp::bicubic}) {
    const Image left = translate_x(img, 2, interp, kFill);   // out(x, y) = in(x + 2, y)
    const Image down = translate_y(img, -1, interp, kFill);  // out(x, y) = in(x, y - 1)
    for (int64_t y = 0; y < 4; ++y)
      for (int64_t x = 0; x < 5; ++x) {
        EXPECT_EQ(left.at(y, x, 0), x + 2 < 5 ? img.at(y, x + 2, 0) : kFill[0])
            << interp_name(interp);
        EXPECT_EQ(down.at(y, x, 0), y >= 1 ? img.at(y - 1, x, 0) : kFill[0]) << interp_name(interp);
      }
  }
}

TEST(ImageOps, RotateAboutTheCentre) {
  // 90 degrees counter-clockwise of a 4x4 image: output (x, y) reads input row x, column 3 - y.
  const Image img = ramp(4, 4);
  const Image r = rotate(img, 90, Interp::bilinear, kFill);
  for (int64_t y = 0; y < 4; ++y)
    for (int64_t x = 0; x < 4; ++x) EXPECT_EQ(r.at(y, x, 0), img.at(x, 3 - y, 0)) << y << "," << x;
  // 30 degrees of a 5x5 RGB image: the centre pixel stays (nearest: its centre maps to itself up to
  // rounding), the corners come from outside (fill).
  const Image rgb = hg::test::random_image(5, 5, 3, 3);
  for (double deg : {30.0, -30.0}) {
    const Image o = rotate(rgb, deg, Interp::bicubic, kFill);
    const Image n = rotate(rgb, deg, Interp::nearest, kFill);
    for (int64_t c = 0; c < 3; ++c) {
      EXPECT_EQ(n.at(2, 2, c), rgb.at(2, 2, c));
      for (auto [y, x] : {std::pair<int, int>{0, 0}, {0, 4}, {4, 0}, {4, 4}})
        EXPECT_EQ(o.at(y, x, c), kFill[size_t(c)]);
    }
  }
  EXPECT_EQ(rotate(rgb, 0, Interp::bilinear, kFill).pixels, rgb.pixels);
}

TEST(ImageOps, ShearSamplesPixelCentres) {
  const Image img = ramp(6, 8);
  // nearest, factor 0.3: row y reads column floor(x + 0.5 + 0.3 (y + 0.5)); row 5: x + 2.15 -> x +
  // 2
  const Image n = shear_x(img, 0.3, Interp::nearest, kFill);
  for (int64_t x = 0; x < 8; ++x) {
    EXPECT_EQ(n.at(0, x, 0), img.at(0, x, 0));
    EXPECT_EQ(n.at(5, x, 0), x + 2 < 8 ? img.at(5, x + 2, 0) : kFill[0]);
  }
  // bilinear, factor 0.2: row 2 is shifted by exactly half a pixel: the mean of two neighbours,
  // truncated
  const Image b = shear_x(img, 0.2, Interp::bilinear, kFill);
  for (int64_t x = 0; x + 1 < 8; ++x)
    EXPECT_EQ(b.at(2, x, 0), (img.at(2, x, 0) + img.at(2, x + 1, 0)) / 2) << x;
  // shear_y is shear_x of the transposed image
  const Image t = shear_y(img, 0.3, Interp::nearest, kFill);
  for (int64_t y = 0; y < 6; ++y)
    EXPECT_EQ(t.at(y, 5, 0), y + 2 < 6 ? img.at(y + 2, 5, 0) : kFill[0]);
}

TEST(ImageOps, BadInputsThrow) {
  EXPECT_THROW(invert(Image{2, 2, 2, std::vector<uint8_t>(8)}), hg::Error);
  EXPECT_THROW(invert(Image{2, 2, 1, std::vector<uint8_t>(3)}), hg::Error);
  EXPECT_THROW(parse_interp("lanczos"), hg::Error);
  EXPECT_EQ(parse_interp("bicubic"), Interp::bicubic);
}
