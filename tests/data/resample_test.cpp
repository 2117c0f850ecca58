// The fast resampler of data/transforms.cpp (padded taps, grouped vertical taps, 4-lane horizontal
// sums, an AVX2 clone) against the plain loops it replaced, kept here as the oracle: every output
// value equal bit for bit, for every filter, flips, 1 to 4 channels, shrinking and enlarging boxes,
// boxes at and beyond the image edges. Compiled without fused multiply-add, as transforms.cpp is.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/random.h"
#include "data/transforms.h"

using namespace hg::data;

namespace {

double triangle(double t) { return std::max(0.0, 1.0 - std::fabs(t)); }
double cubic_half(double t) {
  constexpr double a = -0.5;
  t = std::fabs(t);
  if (t < 1.0) return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
  if (t < 2.0) return (((t - 5.0) * t + 8.0) * t - 4.0) * a;
  return 0.0;
}

// One output position's taps: input pixels lo .. lo + w.size() - 1 with weights w (PIL's filters,
// widened by the shrink factor, renormalised at the edges).
struct Tap {
  int64_t lo = 0;
  std::vector<float> w;
};

Tap tap_of(double start, double len, int64_t in_len, int64_t out_len, Interp interp, int64_t i) {
  const double scale = len / static_cast<double>(out_len);
  const double stretch = std::max(scale, 1.0);
  const double support = (interp == Interp::bicubic ? 2.0 : 1.0) * stretch;
  const double center = start + (static_cast<double>(i) + 0.5) * scale;
  Tap t;
  t.lo = std::max<int64_t>(0, static_cast<int64_t>(std::floor(center - support)));
  const int64_t hi =
      interp == Interp::nearest
          ? t.lo
          : std::min<int64_t>(in_len, static_cast<int64_t>(std::ceil(center + support)));
  std::vector<double> v;
  double sum = 0;
  for (int64_t j = t.lo; j < hi; ++j) {
    const double d = (static_cast<double>(j) + 0.5 - center) / stretch;
    v.push_back(interp == Interp::bicubic ? cubic_half(d) : triangle(d));
    sum += v.back();
  }
  if (sum == 0) {
    t.lo = std::clamp<int64_t>(static_cast<int64_t>(std::floor(center)), 0, in_len - 1);
    v.assign(1, 1.0);
    sum = 1;
  }
  for (double x : v) t.w.push_back(static_cast<float>(x / sum));
  return t;
}

// The plain definition: for output (oy, ox, c), first the vertical sums of the input rows at every
// column the horizontal taps read, then the horizontal sum of those, each in tap order from 0.
std::vector<float> reference_resample(const Image& src, const CropBox& box, int64_t out_h,
                                      int64_t out_w, bool flip, Interp interp) {
  const int64_t C = src.channels;
  std::vector<float> out(static_cast<size_t>(out_h * out_w * C));
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const Tap ty = tap_of(box.y, box.h, src.height, out_h, interp, oy);
    for (int64_t ox = 0; ox < out_w; ++ox) {
      const Tap tx = tap_of(box.x, box.w, src.width, out_w, interp, ox);
      const int64_t dst = flip ? out_w - 1 - ox : ox;
      for (int64_t c = 0; c < C; ++c) {
        float acc = 0;
        for (size_t kx = 0; kx < tx.w.size(); ++kx) {
          const int64_t x = tx.lo + static_cast<int64_t>(kx);
          float col = 0;
          for (size_t ky = 0; ky < ty.w.size(); ++ky) {
            const int64_t y = ty.lo + static_cast<int64_t>(ky);
            col += ty.w[ky] *
                   static_cast<float>(src.pixels[static_cast<size_t>((y * src.width + x) * C + c)]);
          }
          acc += tx.w[kx] * col;
        }
        out[static_cast<size_t>((oy * out_w + dst) * C + c)] = acc;
      }
    }
  }
  return out;
}

// Texture with edges and the full 0..255 range (not constant, not smooth).
Image textured(int64_t h, int64_t w, int64_t c, uint64_t seed) {
  hg::Generator g(seed);
  Image img{h, w, c, std::vector<uint8_t>(static_cast<size_t>(h * w * c))};
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k) {
        const double v =
            128 + 90 * std::sin(0.37 * x + k) * std::cos(0.21 * y - k) + g.uniform(-40, 40);
        img.pixels[static_cast<size_t>((y * w + x) * c + k)] =
            static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
      }
  return img;
}

}  // namespace

TEST(Resample, EqualsThePlainLoopsBitForBit) {
  hg::Generator g(11);
  int cases = 0;
  for (int64_t C : {1, 2, 3, 4}) {
    const Image img = textured(53 + C, 71 - C, C, static_cast<uint64_t>(C));
    for (Interp interp : {Interp::nearest, Interp::bilinear, Interp::bicubic}) {
      for (int trial = 0; trial < 12; ++trial) {
        // Fractional boxes: shrinking (up to 6x), enlarging, thin, and some reaching past the
        // image.
        const double bw = g.uniform(1.5, static_cast<double>(img.width));
        const double bh = g.uniform(1.5, static_cast<double>(img.height));
        const double bx = g.uniform(-2.0, static_cast<double>(img.width) - bw + 2.0);
        const double by = g.uniform(-2.0, static_cast<double>(img.height) - bh + 2.0);
        const int64_t out_h = 1 + g.randint(trial % 3 == 0 ? 60 : 20),
                      out_w = 1 + g.randint(trial % 2 ? 64 : 12);
        const bool flip = trial % 2 == 1;
        const CropBox box{bx, by, bw, bh};
        SCOPED_TRACE(testing::Message()
                     << "C " << C << " " << interp_name(interp) << " box " << bx << "," << by << " "
                     << bw << "x" << bh << " -> " << out_h << "x" << out_w << " flip " << flip);
        std::vector<float> fast(static_cast<size_t>(out_h * out_w * C), NAN);
        resample(img, box, out_h, out_w, flip, interp, fast.data());
        const std::vector<float> want = reference_resample(img, box, out_h, out_w, flip, interp);
        float spread = 0;
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_EQ(fast[i], want[i]) << "value " << i;
          spread = std::max(spread, std::fabs(want[i] - want[0]));
        }
        cases += spread > 1.0f;  // the outputs are not all one value
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 4 * 3 * 12);
}

TEST(Resample, LargeShrinkAndTheImageEdge) {
  // A whole 400-pixel-wide image to 9 pixels (44x shrink: a bicubic filter of ~180 taps) and a box
  // hanging off the bottom-right corner.
  const Image img = textured(37, 400, 3, 5);
  for (Interp interp : {Interp::bilinear, Interp::bicubic}) {
    for (const CropBox box : {CropBox{0, 0, 400, 37}, CropBox{380.5, 30.25, 30, 12}}) {
      std::vector<float> fast(9 * 5 * 3, NAN);
      resample(img, box, 5, 9, false, interp, fast.data());
      const std::vector<float> want = reference_resample(img, box, 5, 9, false, interp);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(fast[i], want[i]) << interp_name(interp) << " value " << i;
    }
  }
}
