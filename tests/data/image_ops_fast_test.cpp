// The optimised 8-bit ops (data/image_ops.cpp) and the transform's 8-bit rounding against the plain
// loops they replaced (image_ops_reference.cpp): every pixel equal, on random, low-contrast and
// constant images of odd sizes, gray and RGB, over the arguments RandAugment / ColorJitter use and
// beyond (all filters, fractional and integer shifts, rotations, shears, general matrices).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "core/random.h"
#include "data/image_ops.h"
#include "data/transforms.h"
#include "image_ops_reference.h"

using namespace hg::data;

namespace {

// kind 0: uniform random bytes; 1: a narrow range (autocontrast / equalize stretch it); 2: constant;
// 3: smooth ramps with noise (clamped sums land near the rounding edges of the enhance ops).
Image make_image(int64_t h, int64_t w, int64_t c, int kind, hg::Generator& gen) {
  Image img{h, w, c, std::vector<uint8_t>(size_t(h * w * c))};
  for (int64_t i = 0; i < h * w * c; ++i) {
    uint8_t v = 0;
    if (kind == 0) v = uint8_t(gen.randint(256));
    if (kind == 1) v = uint8_t(90 + gen.randint(40));
    if (kind == 2) v = 77;
    if (kind == 3) v = uint8_t(std::clamp<int64_t>((i * 7) % 256 + gen.randint(9) - 4, 0, 255));
    img.pixels[size_t(i)] = v;
  }
  return img;
}

struct Shape {
  int64_t h, w, c;
};
const Shape kShapes[] = {{1, 1, 1}, {1, 1, 3}, {1, 7, 3}, {6, 1, 1}, {2, 3, 3},   {3, 3, 1},
                         {5, 7, 3}, {7, 5, 1}, {37, 23, 3}, {23, 37, 1}, {64, 48, 3}};

template <typename F>
void for_images(F&& f) {
  hg::Generator gen(11);
  for (const Shape& s : kShapes)
    for (int kind = 0; kind < 4; ++kind) f(make_image(s.h, s.w, s.c, kind, gen), kind);
}

std::string describe(const Image& img, int kind) {
  return hg::str(img.height, "x", img.width, "x", img.channels, " kind ", kind);
}

}  // namespace

TEST(ImageOpsFast, PointOpsMatchTheReference) {
  for_images([](const Image& img, int kind) {
    const std::string d = describe(img, kind);
    EXPECT_EQ(auto_contrast(img).pixels, reference::auto_contrast(img).pixels) << d;
    EXPECT_EQ(equalize(img).pixels, reference::equalize(img).pixels) << d;
    EXPECT_EQ(invert(img).pixels, reference::invert(img).pixels) << d;
    for (int bits = 0; bits <= 8; ++bits)
      EXPECT_EQ(posterize(img, bits).pixels, reference::posterize(img, bits).pixels) << d << " bits " << bits;
    for (int t : {0, 1, 26, 127, 128, 230, 255, 256})
      EXPECT_EQ(solarize(img, t).pixels, reference::solarize(img, t).pixels) << d << " t " << t;
    for (int add : {0, 1, 99, 200, 300})
      for (int t : {0, 128, 256})
        EXPECT_EQ(solarize_add(img, add, t).pixels, reference::solarize_add(img, add, t).pixels)
            << d << " add " << add << " t " << t;
  });
}

TEST(ImageOpsFast, EnhanceOpsMatchTheReference) {
  hg::Generator fgen(5);
  std::vector<double> factors{0.0, 0.1, 0.19, 0.5, 0.6, 0.9999, 1.0, 1.3, 1.4, 1.81, 1.9, 2.8, 3.7, -0.5};
  for (int i = 0; i < 10; ++i) factors.push_back(fgen.uniform(0.0, 3.0));
  for_images([&](const Image& img, int kind) {
    for (double f : factors) {
      const std::string d = hg::str(describe(img, kind), " factor ", f);
      EXPECT_EQ(adjust_color(img, f).pixels, reference::adjust_color(img, f).pixels) << d;
      EXPECT_EQ(adjust_contrast(img, f).pixels, reference::adjust_contrast(img, f).pixels) << d;
      EXPECT_EQ(adjust_brightness(img, f).pixels, reference::adjust_brightness(img, f).pixels) << d;
      EXPECT_EQ(adjust_sharpness(img, f).pixels, reference::adjust_sharpness(img, f).pixels) << d;
    }
  });
}

TEST(ImageOpsFast, AffineMatchesTheReference) {
  hg::Generator mgen(9);
  for_images([&](const Image& img, int kind) {
    const double W = double(img.width), H = double(img.height);
    std::vector<std::array<double, 6>> ms{
        {1, 0, 0, 0, 1, 0},                                 // identity
        {1, 0, 3, 0, 1, 0}, {1, 0, 0, 0, 1, -2},            // integer shifts
        {1, 0, -0.405 * W, 0, 1, 0}, {1, 0, 0, 0, 1, 0.405 * H},  // TranslateRel at M 9
        {1, 0.27, 0, 0, 1, 0}, {1, -0.27, 0, 0, 1, 0},      // ShearX at M 9
        {1, 0, 0, 0.27, 1, 0}, {1, 0, 0, -0.3, 1, 0},       // ShearY
        {2, 0, -1, 0, 0.5, 3}, {-1, 0, W, 0, -1, H}};       // scale, 180 degrees
    for (double deg : {27.0, -27.0, 90.0, 13.3, -180.0}) {  // rotate()'s matrix, about the centre
      const double a = -deg * std::numbers::pi / 180.0, cs = std::cos(a), sn = std::sin(a);
      const double cx = W / 2, cy = H / 2;
      ms.push_back({cs, sn, cx - cs * cx - sn * cy, -sn, cs, cy + sn * cx - cs * cy});
    }
    for (int i = 0; i < 4; ++i) {  // general matrices
      std::array<double, 6> m;
      for (double& v : m) v = mgen.uniform(-1.5, 1.5);
      m[2] *= W;
      m[5] *= H;
      ms.push_back(m);
    }
    const Fill fill{7, 128, 250};
    for (const auto& m : ms)
      for (Interp ip : {Interp::nearest, Interp::bilinear, Interp::bicubic})
        EXPECT_EQ(affine(img, m, ip, fill).pixels, reference::affine(img, m, ip, fill).pixels)
            << describe(img, kind) << " " << interp_name(ip) << " m " << m[0] << " " << m[1] << " " << m[2]
            << " " << m[3] << " " << m[4] << " " << m[5];
  });
}

// The geometric ops at training sizes: the fast path splits each output row into runs of equal
// fractional offsets (their length changes where the source coordinate crosses a power of two, at
// 64 and 128 here) and lone pixels, interior or clamped at the border; every pixel must still equal
// the per-pixel reference. Random RGB / gray bytes (never a constant image), odd sizes, the
// arguments RandAugment draws (M in [0, 10], both signs) and both filters of train_interpolation.
namespace {

void expect_affine_at_training_sizes_match() {
  hg::Generator gen(21);
  const Shape shapes[] = {{224, 224, 3}, {131, 97, 3}, {97, 131, 1}, {161, 257, 3}};
  for (const Shape& s : shapes) {
    const Image img = make_image(s.h, s.w, s.c, 0, gen);
    const double W = double(s.w), H = double(s.h);
    for (int trial = 0; trial < 6; ++trial) {
      const double level = gen.uniform(0.0, 1.0), sign = trial % 2 ? -1.0 : 1.0;
      const double deg = sign * 30 * level, a = -deg * std::numbers::pi / 180.0;
      const double cs = std::cos(a), sn = std::sin(a), cx = W / 2, cy = H / 2;
      const double shear = sign * 0.3 * level, tx = sign * 0.45 * level * W,
                   ty = -sign * 0.45 * level * H;
      // Rotate, ShearX, ShearY, TranslateXRel, TranslateYRel
      const std::array<double, 6> ms[] = {
          {cs, sn, cx - cs * cx - sn * cy, -sn, cs, cy + sn * cx - cs * cy},
          {1, shear, 0, 0, 1, 0},
          {1, 0, 0, shear, 1, 0},
          {1, 0, tx, 0, 1, 0},
          {1, 0, 0, 0, 1, ty}};
      const Fill fill{128, 128, 128};
      for (const auto& m : ms)
        for (Interp ip : {Interp::bilinear, Interp::bicubic, Interp::nearest})
          ASSERT_EQ(affine(img, m, ip, fill).pixels, reference::affine(img, m, ip, fill).pixels)
              << s.h << "x" << s.w << "x" << s.c << " " << interp_name(ip) << " m " << m[0] << " "
              << m[1] << " " << m[2] << " " << m[3] << " " << m[4] << " " << m[5];
    }
  }
}

}  // namespace

TEST(ImageOpsFast, AffineAtTrainingSizesMatchesTheReference) {
  // The AVX2 lone-pixel path (where the CPU has it), then the scalar one.
  for (const bool simd : {true, false}) {
    SCOPED_TRACE(simd ? "simd on" : "simd off");
    const bool was = affine_simd_for_tests(simd);
    expect_affine_at_training_sizes_match();
    affine_simd_for_tests(was);
  }
}

TEST(ImageOpsFast, RoundingToEightBitsMatchesLround) {
  // Every float near each half-integer and integer of [-2, 258], the range's ends and beyond.
  std::vector<float> values{-1e9f, -0.0f, 0.0f, 1e9f, 255.49998f, 255.5f, 0.49999997f, 0.5f};
  for (int k = -4; k <= 516; ++k) {
    float v = float(k) / 2.0f;
    for (int i = 0; i < 6; ++i) v = std::nextafter(v, -1e30f);
    for (int i = 0; i < 13; ++i, v = std::nextafter(v, 1e30f)) values.push_back(v);
  }
  hg::Generator gen(3);
  for (int i = 0; i < 20000; ++i) values.push_back(float(gen.uniform(-20.0, 280.0)));
  std::vector<uint8_t> got(values.size());
  round_to_u8(values.data(), int64_t(values.size()), got.data());
  for (size_t i = 0; i < values.size(); ++i)
    ASSERT_EQ(got[i], reference::round_to_u8(values[i])) << "value " << values[i];
}
