// 8-bit image operations with PIL's semantics (see image_ops.h). These run on every training image
// (RandAugment, ColorJitter), so they are written for speed with the arithmetic of the plain
// per-pixel definitions kept operation for operation: the same float / double expressions in the
// same order, so every pixel equals the straightforward loops' (tests/data/image_ops_reference.cpp
// is that oracle, image_ops_fast_test.cpp compares them). What changes is only the work around the
// arithmetic: 256-entry tables where an output depends on one input byte, row pointers instead of
// per-tap index math, no libm floor, one pass over all channels, no degenerate-image copies, and
// the taps a geometric op's sample provably does not need skipped (a zero fractional offset:
// weights exactly {0, 1, 0, 0}).
#include "data/image_ops.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace hg::data {
namespace {

using Lut = std::array<uint8_t, 256>;
using Hist = std::array<int64_t, 256>;

void check_image(const char* op, const Image& img) {
  HG_CHECK(img.height > 0 && img.width > 0, op, ": empty image ", img.height, "x", img.width);
  HG_CHECK(img.channels == 1 || img.channels == 3, op, ": expected 1 or 3 channels, got ",
           img.channels);
  HG_CHECK(img.pixels.size() == static_cast<size_t>(img.height * img.width * img.channels), op,
           ": image holds ", img.pixels.size(), " bytes, expected ", img.height, "x", img.width,
           "x", img.channels);
}

uint8_t clamp_u8(int64_t v) { return static_cast<uint8_t>(std::clamp<int64_t>(v, 0, 255)); }

Image same_shape(const Image& img) {
  return Image{img.height, img.width, img.channels, std::vector<uint8_t>(img.pixels.size())};
}

// One table for every channel.
Image apply_lut(const Image& img, const Lut& lut) {
  Image out = same_shape(img);
  const uint8_t* in = img.pixels.data();
  uint8_t* o = out.pixels.data();
  for (size_t i = 0, n = img.pixels.size(); i < n; ++i) o[i] = lut[in[i]];
  return out;
}

// One table per channel, each built from that channel's histogram (all channels counted in one
// pass).
template <typename MakeLut>
Image point_per_channel(const Image& img, MakeLut make) {
  const int64_t C = img.channels, n = img.height * img.width;
  std::array<Hist, 3> hist{};
  const uint8_t* in = img.pixels.data();
  if (C == 3) {
    for (int64_t p = 0; p < n; ++p) {
      ++hist[0][in[3 * p]];
      ++hist[1][in[3 * p + 1]];
      ++hist[2][in[3 * p + 2]];
    }
  } else {
    for (int64_t p = 0; p < n; ++p) ++hist[0][in[p]];
  }
  std::array<Lut, 3> lut;
  for (int64_t c = 0; c < C; ++c) lut[size_t(c)] = make(hist[size_t(c)]);
  if (C == 1) return apply_lut(img, lut[0]);
  Image out = same_shape(img);
  uint8_t* o = out.pixels.data();
  for (int64_t p = 0; p < n; ++p) {
    o[3 * p] = lut[0][in[3 * p]];
    o[3 * p + 1] = lut[1][in[3 * p + 1]];
    o[3 * p + 2] = lut[2][in[3 * p + 2]];
  }
  return out;
}

template <typename F>
Lut make_lut(F f) {
  Lut lut;
  for (int v = 0; v < 256; ++v) lut[size_t(v)] = f(v);
  return lut;
}

// PIL's ImagingBlend of one value: a + factor * (b - a) in float, clamped to [0, 255], truncated.
// Written with max / min so that the row loop below vectorises; equal to "v <= 0 ? 0 : v >= 255 ?
// 255 : v" for every non-NaN v.
inline uint8_t blend_value(float a, float b, float alpha) {
  const float v = a + alpha * (b - a);
  return static_cast<uint8_t>(static_cast<int32_t>(std::min(std::max(v, 0.0f), 255.0f)));
}

// out[i] = blend(degenerate[i], img[i]) over n contiguous bytes.
void blend_row(const uint8_t* degenerate, const uint8_t* img, float alpha, uint8_t* out,
               int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = blend_value(static_cast<float>(degenerate[i]), static_cast<float>(img[i]), alpha);
}

// A blend whose degenerate image is one constant: a table of the 256 values.
Image blend_with_constant(const Image& img, uint8_t degenerate, double factor) {
  const float alpha = static_cast<float>(factor), a = degenerate;
  return apply_lut(img,
                   make_lut([&](int v) { return blend_value(a, static_cast<float>(v), alpha); }));
}

// The a = -1 cubic convolution weights of the 4 taps at offsets -1, 0, 1, 2 from floor(p).
std::array<double, 4> cubic_weights(double d) {
  return {-d + 2 * d * d - d * d * d, 1 - 2 * d * d + d * d * d, d + d * d - d * d * d,
          -d * d + d * d * d};
}

// floor(s) for |s| < 2^62 without a libm call.
inline int64_t floor_i64(double s) {
  const auto t = static_cast<int64_t>(s);
  return s < static_cast<double>(t) ? t - 1 : t;
}

// Byte values as doubles: a load instead of an int-to-double conversion in the filter loops.
constexpr std::array<double, 256> kByteValue = [] {
  std::array<double, 256> t{};
  for (int v = 0; v < 256; ++v) t[size_t(v)] = v;
  return t;
}();

inline uint8_t clamp_truncate(double v) {
  return v <= 0.0 ? 0 : v >= 255.0 ? 255 : static_cast<uint8_t>(v);
}

// One output pixel of a bilinear / bicubic sample at (sx, sy) = p - 0.5, inside the image.
// A zero fractional offset makes the weights exactly {1, 0} / {0, 1, 0, 0}: every skipped term is
// +-0 added to a finite value, so the sum is the one tap's value bit for bit.
template <int C>
[[gnu::always_inline]] inline void sample_bilinear(const uint8_t* img, int64_t H, int64_t W,
                                                   double sx, double sy, uint8_t* o) {
  const int64_t x0 = floor_i64(sx), y0 = floor_i64(sy);
  const double dx = sx - static_cast<double>(x0), dy = sy - static_cast<double>(y0);
  const int64_t xa = std::clamp<int64_t>(x0, 0, W - 1) * C,
                xb = std::clamp<int64_t>(x0 + 1, 0, W - 1) * C;
  const int64_t ya = std::clamp<int64_t>(y0, 0, H - 1);
  const int64_t yb = y0 + 1 < H ? std::clamp<int64_t>(y0 + 1, 0, H - 1) : ya;  // PIL: no row below
  const uint8_t* ra = img + ya * W * C;
  const uint8_t* rb = img + yb * W * C;
  for (int c = 0; c < C; ++c) {
    const double a = ra[xa + c], b = ra[xb + c];
    const double top = a + (b - a) * dx;
    double v = top;
    if (dy != 0.0) {
      const double a2 = rb[xa + c], b2 = rb[xb + c];
      const double bottom = a2 + (b2 - a2) * dx;
      v = top + (bottom - top) * dy;
    }
    o[c] = clamp_truncate(v);
  }
}

template <int C>
[[gnu::always_inline]] inline void sample_bicubic(const uint8_t* img, int64_t H, int64_t W,
                                                  double sx, double sy, uint8_t* o) {
  const int64_t x0 = floor_i64(sx), y0 = floor_i64(sy);
  const double dx = sx - static_cast<double>(x0), dy = sy - static_cast<double>(y0);
  int64_t col[4];
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) col[j] = std::clamp<int64_t>(x0 - 1 + j, 0, W - 1) * C;
  const uint8_t* row[4];
  int64_t prev = std::clamp<int64_t>(y0 - 1, 0, H - 1);
  row[0] = img + prev * W * C;
#pragma GCC unroll 3
  for (int k = 1; k < 4; ++k) {  // PIL repeats the previous row below (and above) the image
    const int64_t yy = y0 - 1 + k;
    if (yy >= 0 && yy < H) prev = yy;
    row[k] = img + prev * W * C;
  }
  // One row's horizontal filter, all channels (dx = 0: the middle tap's value, see above).
  struct Sum {
    double v[C];
  };
  const std::array<double, 4> wx = cubic_weights(dx);
  const bool whole_x = dx == 0.0;
  auto filter_row = [&](const uint8_t* r) [[gnu::always_inline]] {
    Sum out;
#pragma GCC unroll 3
    for (int c = 0; c < C; ++c) {
      if (whole_x) {
        out.v[c] = kByteValue[r[col[1] + c]];
        continue;
      }
      double s = 0;
      s += wx[0] * kByteValue[r[col[0] + c]];
      s += wx[1] * kByteValue[r[col[1] + c]];
      s += wx[2] * kByteValue[r[col[2] + c]];
      s += wx[3] * kByteValue[r[col[3] + c]];
      out.v[c] = s;
    }
    return out;
  };
  if (dy == 0.0) {  // only row 1 counts
    const Sum r1 = filter_row(row[1]);
#pragma GCC unroll 3
    for (int c = 0; c < C; ++c) o[c] = clamp_truncate(r1.v[c]);
    return;
  }
  const Sum r0 = filter_row(row[0]), r1 = filter_row(row[1]), r2 = filter_row(row[2]),
            r3 = filter_row(row[3]);
  const std::array<double, 4> wy = cubic_weights(dy);
#pragma GCC unroll 3
  for (int c = 0; c < C; ++c)
    o[c] = clamp_truncate(wy[0] * r0.v[c] + wy[1] * r1.v[c] + wy[2] * r2.v[c] + wy[3] * r3.v[c]);
}

template <int C>
void affine_impl(const Image& img, const std::array<double, 6>& m, Interp interp, const Fill& fill,
                 Image& out) {
  const int64_t H = img.height, W = img.width;
  const double Wd = static_cast<double>(W), Hd = static_cast<double>(H);
  const uint8_t* in = img.pixels.data();
  for (int64_t y = 0; y < H; ++y) {
    const double v = static_cast<double>(y) + 0.5;
    uint8_t* o = out.pixels.data() + y * W * C;
    for (int64_t x = 0; x < W; ++x, o += C) {
      const double u = static_cast<double>(x) + 0.5;
      const double px = m[0] * u + m[1] * v + m[2], py = m[3] * u + m[4] * v + m[5];
      if (!(px >= 0.0 && px < Wd && py >= 0.0 && py < Hd)) {
        for (int c = 0; c < C; ++c) o[c] = fill[size_t(c)];
        continue;
      }
      if (interp == Interp::nearest) {
        const uint8_t* s = in + (static_cast<int64_t>(py) * W + static_cast<int64_t>(px)) * C;
        for (int c = 0; c < C; ++c) o[c] = s[c];
      } else if (interp == Interp::bilinear) {
        sample_bilinear<C>(in, H, W, px - 0.5, py - 0.5, o);
      } else {
        sample_bicubic<C>(in, H, W, px - 0.5, py - 0.5, o);
      }
    }
  }
}

}  // namespace

Interp parse_interp(const std::string& name) {
  if (name == "nearest") return Interp::nearest;
  if (name == "bilinear") return Interp::bilinear;
  if (name == "bicubic") return Interp::bicubic;
  throw Error(str("interpolation must be nearest, bilinear or bicubic, got '", name, "'"));
}

const char* interp_name(Interp interp) {
  switch (interp) {
    case Interp::nearest: return "nearest";
    case Interp::bilinear: return "bilinear";
    case Interp::bicubic: return "bicubic";
  }
  return "?";
}

uint8_t luma(uint8_t r, uint8_t g, uint8_t b) {
  return static_cast<uint8_t>((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
}

Image auto_contrast(const Image& img) {
  check_image("auto_contrast", img);
  return point_per_channel(img, [](const Hist& h) {
    int lo = 0, hi = 255;
    while (lo < 256 && h[size_t(lo)] == 0) ++lo;
    while (hi >= 0 && h[size_t(hi)] == 0) --hi;
    if (hi <= lo) return make_lut([](int v) { return static_cast<uint8_t>(v); });
    const double scale = 255.0 / (hi - lo), offset = -lo * scale;
    return make_lut([&](int v) { return clamp_u8(static_cast<int64_t>(v * scale + offset)); });
  });
}

Image equalize(const Image& img) {
  check_image("equalize", img);
  return point_per_channel(img, [](const Hist& h) {
    Lut lut = make_lut([](int v) { return static_cast<uint8_t>(v); });
    int64_t total = 0, last = 0, used = 0;
    for (int v = 0; v < 256; ++v)
      if (h[size_t(v)] > 0) total += h[size_t(v)], last = h[size_t(v)], ++used;
    const int64_t step = (total - last) / 255;  // the last used value's count does not spread
    if (used <= 1 || step == 0) return lut;
    int64_t n = step / 2;
    for (int v = 0; v < 256; ++v) {
      lut[size_t(v)] = clamp_u8(n / step);
      n += h[size_t(v)];
    }
    return lut;
  });
}

Image invert(const Image& img) {
  check_image("invert", img);
  return apply_lut(img, make_lut([](int v) { return static_cast<uint8_t>(255 - v); }));
}

Image posterize(const Image& img, int bits) {
  check_image("posterize", img);
  HG_CHECK(bits >= 0 && bits <= 8, "posterize: bits must be in [0, 8], got ", bits);
  const int mask = ~((1 << (8 - bits)) - 1) & 0xff;
  return apply_lut(img, make_lut([mask](int v) { return static_cast<uint8_t>(v & mask); }));
}

Image solarize(const Image& img, int threshold) {
  check_image("solarize", img);
  HG_CHECK(threshold >= 0 && threshold <= 256, "solarize: threshold must be in [0, 256], got ",
           threshold);
  return apply_lut(img, make_lut([threshold](int v) {
                     return static_cast<uint8_t>(v < threshold ? v : 255 - v);
                   }));
}

Image solarize_add(const Image& img, int add, int threshold) {
  check_image("solarize_add", img);
  return apply_lut(img, make_lut([add, threshold](int v) {
                     return v < threshold ? clamp_u8(v + add) : static_cast<uint8_t>(v);
                   }));
}

Image adjust_color(const Image& img, double factor) {
  check_image("adjust_color", img);
  if (img.channels == 1) return img;  // gray -> gray -> blend with itself
  const int64_t W = img.width, n = W * 3;
  const float alpha = static_cast<float>(factor);
  Image out = same_shape(img);
  std::vector<uint8_t> gray(static_cast<size_t>(n));  // one row of the degenerate image
  for (int64_t y = 0; y < img.height; ++y) {
    const uint8_t* in = img.pixels.data() + y * n;
    for (int64_t x = 0; x < W; ++x) {
      const uint8_t l = luma(in[3 * x], in[3 * x + 1], in[3 * x + 2]);
      gray[size_t(3 * x)] = gray[size_t(3 * x + 1)] = gray[size_t(3 * x + 2)] = l;
    }
    blend_row(gray.data(), in, alpha, out.pixels.data() + y * n, n);
  }
  return out;
}

Image adjust_contrast(const Image& img, double factor) {
  check_image("adjust_contrast", img);
  const int64_t C = img.channels, n = img.height * img.width;
  // Integer sum: equal to a double sum of the same values (every partial sum < 2^53 is exact).
  int64_t sum = 0;
  const uint8_t* px = img.pixels.data();
  if (C == 1) {
    for (int64_t p = 0; p < n; ++p) sum += px[p];
  } else {
    for (int64_t p = 0; p < n; ++p) sum += luma(px[3 * p], px[3 * p + 1], px[3 * p + 2]);
  }
  const auto mean = static_cast<uint8_t>(
      static_cast<int64_t>(static_cast<double>(sum) / static_cast<double>(n) + 0.5));
  return blend_with_constant(img, mean, factor);
}

Image adjust_brightness(const Image& img, double factor) {
  check_image("adjust_brightness", img);
  return blend_with_constant(img, 0, factor);  // blend with black
}

Image adjust_sharpness(const Image& img, double factor) {
  check_image("adjust_sharpness", img);
  const int64_t H = img.height, W = img.width, C = img.channels, n = W * C;
  const float alpha = static_cast<float>(factor);
  Image out = same_shape(img);
  // The degenerate image one row at a time: the one-pixel border keeps its values (PIL's 3x3
  // filter), inside round(s / 13) of s = 5 centre + the 8 neighbours.
  std::vector<uint8_t> smooth(static_cast<size_t>(n));
  for (int64_t y = 0; y < H; ++y) {
    const uint8_t* r1 = img.pixels.data() + y * n;
    std::copy(r1, r1 + n, smooth.begin());
    if (y > 0 && y + 1 < H) {
      const uint8_t* r0 = r1 - n;
      const uint8_t* r2 = r1 + n;
      uint8_t* s = smooth.data();
      for (int64_t j = C; j < n - C; ++j) {
        const int32_t sum = 4 * r1[j] + r0[j - C] + r0[j] + r0[j + C] + r1[j - C] + r1[j] +
                            r1[j + C] + r2[j - C] + r2[j] + r2[j + C];
        s[j] = static_cast<uint8_t>((2 * sum + 13) / 26);  // round(sum / 13), at most 255
      }
    }
    blend_row(smooth.data(), r1, alpha, out.pixels.data() + y * n, n);
  }
  return out;
}

Image affine(const Image& img, const std::array<double, 6>& m, Interp interp, const Fill& fill) {
  check_image("affine", img);
  Image out = same_shape(img);
  if (img.channels == 3)
    affine_impl<3>(img, m, interp, fill, out);
  else
    affine_impl<1>(img, m, interp, fill, out);
  return out;
}

Image rotate(const Image& img, double degrees, Interp interp, const Fill& fill) {
  // Output pixel -> input: rotate by -degrees about the centre (PIL's Image.rotate, expand=False).
  const double a = -degrees * std::numbers::pi / 180.0;
  // rounded to 15 decimals as PIL does, so that multiples of 90 degrees map pixels exactly
  auto round15 = [](double v) { return std::round(v * 1e15) / 1e15; };
  const double cs = round15(std::cos(a)), sn = round15(std::sin(a));
  const double cx = static_cast<double>(img.width) / 2.0,
               cy = static_cast<double>(img.height) / 2.0;
  return affine(img, {cs, sn, cx - cs * cx - sn * cy, -sn, cs, cy + sn * cx - cs * cy}, interp,
                fill);
}

Image shear_x(const Image& img, double factor, Interp interp, const Fill& fill) {
  return affine(img, {1, factor, 0, 0, 1, 0}, interp, fill);
}
Image shear_y(const Image& img, double factor, Interp interp, const Fill& fill) {
  return affine(img, {1, 0, 0, factor, 1, 0}, interp, fill);
}
Image translate_x(const Image& img, double pixels, Interp interp, const Fill& fill) {
  return affine(img, {1, 0, pixels, 0, 1, 0}, interp, fill);
}
Image translate_y(const Image& img, double pixels, Interp interp, const Fill& fill) {
  return affine(img, {1, 0, 0, 0, 1, pixels}, interp, fill);
}

}  // namespace hg::data
