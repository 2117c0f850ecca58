// 8-bit image operations with PIL's semantics (see image_ops.h). These run on every training image
// (RandAugment, ColorJitter), so they are written for speed with the arithmetic of the plain
// per-pixel definitions kept operation for operation: the same float / double expressions in the
// same order, so every pixel equals the straightforward loops' (tests/data/image_ops_reference.cpp
// is that oracle, image_ops_fast_test.cpp compares them). What changes is only the work around the
// arithmetic: 256-entry tables where an output depends on one input byte, row pointers instead of
// per-tap index math, no libm floor, one pass over all channels, no degenerate-image copies, and
// the taps a geometric op's sample provably does not need skipped (a zero fractional offset:
// weights exactly {0, 1, 0, 0}). The affine warp works in runs of pixels that share one filter
// (translations, shears: contiguous bytes, vectorised), ShearY on the transposed image, and lone
// pixels (rotations) with the RGB channels in the lanes of one AVX2 vector where the CPU has it.
#include "data/image_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
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

// One output pixel of a bilinear / bicubic sample at (sx, sy) = p - 0.5 = (x0 + dx, y0 + dy),
// x0 = floor(sx), y0 = floor(sy), with taps clamped to the image as PIL does.
// A zero fractional offset makes the weights exactly {1, 0} / {0, 1, 0, 0}: every skipped term is
// +-0 added to a finite value, so the sum is the one tap's value bit for bit.
template <int C>
[[gnu::always_inline]] inline void sample_bilinear(const uint8_t* img, int64_t H, int64_t W,
                                                   int64_t x0, int64_t y0, double dx, double dy,
                                                   uint8_t* o) {
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
                                                  int64_t x0, int64_t y0, double dx, double dy,
                                                  uint8_t* o) {
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

// One output row's sample points p = M (u, v), u = x + 0.5, v = y + 0.5, with the reference's
// arithmetic ((m[0] u + m[1] v) + m[2], the m[1] v term the same for the whole row). Pure
// arithmetic, no branches: the loop vectorises.
void row_points(const std::array<double, 6>& m, int64_t y, int64_t W, double* __restrict px,
                double* __restrict py) {
  const double v = static_cast<double>(y) + 0.5;
  const double m0 = m[0], mvx = m[1] * v, m2 = m[2], m3 = m[3], mvy = m[4] * v, m5 = m[5];
  const auto n = static_cast<int32_t>(W);  // an int32 counter: its conversion vectorises
  for (int32_t x = 0; x < n; ++x) {
    const double u = static_cast<double>(x) + 0.5;
    px[x] = m0 * u + mvx + m2;
    py[x] = m3 * u + mvy + m5;
  }
}

// A run of interior output bytes o[0, n) whose samples share (dx, dy), source row y0 and column
// offset: each byte is the same fixed filter over the source bytes at the same relative
// positions, so the loop runs over contiguous bytes and vectorises. `src` points at the source
// byte of the run's first output byte at tap (x0, y0); `stride` is a source row in bytes.
// Per byte, the arithmetic is the per-pixel definition's, term for term (zero offsets skip terms
// that are exactly +-0, see sample_bilinear).
template <int C>
[[gnu::target_clones("avx2", "default")]] void bilinear_run(const uint8_t* src, int64_t stride,
                                                            double dx, double dy, uint8_t* o,
                                                            int64_t n) {
  const uint8_t* a = src;
  const uint8_t* b = src + stride;
  if (dy == 0.0) {
    for (int64_t j = 0; j < n; ++j) {
      const double p = a[j], q = a[j + C];
      o[j] = clamp_truncate(p + (q - p) * dx);
    }
    return;
  }
  for (int64_t j = 0; j < n; ++j) {
    const double p = a[j], q = a[j + C], p2 = b[j], q2 = b[j + C];
    const double top = p + (q - p) * dx, bottom = p2 + (q2 - p2) * dx;
    o[j] = clamp_truncate(top + (bottom - top) * dy);
  }
}

template <int C>
[[gnu::target_clones("avx2", "default")]] void bicubic_run(const uint8_t* src, int64_t stride,
                                                           double dx, double dy, uint8_t* o,
                                                           int64_t n) {
  const std::array<double, 4> wx = cubic_weights(dx), wy = cubic_weights(dy);
  const uint8_t* r0 = src - stride - C;  // tap (x0 - 1, y0 - 1)
  const uint8_t* r1 = r0 + stride;
  const uint8_t* r2 = r1 + stride;
  const uint8_t* r3 = r2 + stride;
  if (dx == 0.0 && dy == 0.0) {  // an integer shift: the tap itself
    for (int64_t j = 0; j < n; ++j) o[j] = r1[j + C];
    return;
  }
  if (dy == 0.0) {  // only row 1; each source byte feeds 4 outputs: converted once, in chunks
    constexpr int64_t kChunk = 1024;
    double b[kChunk + 3 * C];
    for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
      const int64_t len = std::min(kChunk, n - j0);
      for (int64_t j = 0; j < len + 3 * C; ++j) b[j] = r1[j0 + j];
      for (int64_t j = 0; j < len; ++j) {
        double s = 0;
        s += wx[0] * b[j];
        s += wx[1] * b[j + C];
        s += wx[2] * b[j + 2 * C];
        s += wx[3] * b[j + 3 * C];
        o[j0 + j] = clamp_truncate(s);
      }
    }
    return;
  }
  if (dx == 0.0) {  // each row's value is its middle tap
    for (int64_t j = 0; j < n; ++j) {
      const double v = wy[0] * double(r0[j + C]) + wy[1] * double(r1[j + C]) +
                       wy[2] * double(r2[j + C]) + wy[3] * double(r3[j + C]);
      o[j] = clamp_truncate(v);
    }
    return;
  }
  for (int64_t j = 0; j < n; ++j) {
    double h[4];
    const uint8_t* rows[4] = {r0, r1, r2, r3};
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const uint8_t* r = rows[k];
      double s = 0;
      s += wx[0] * r[j];
      s += wx[1] * r[j + C];
      s += wx[2] * r[j + 2 * C];
      s += wx[3] * r[j + 3 * C];
      h[k] = s;
    }
    o[j] = clamp_truncate(wy[0] * h[0] + wy[1] * h[1] + wy[2] * h[2] + wy[3] * h[3]);
  }
}

// One interior pixel (all C channels) of the runs above: the same arithmetic, unrolled.
template <int C>
[[gnu::always_inline]] inline void bilinear_pixel(const uint8_t* src, int64_t stride, double dx,
                                                  double dy, uint8_t* o) {
  const uint8_t* a = src;
  const uint8_t* b = src + stride;
#pragma GCC unroll 3
  for (int c = 0; c < C; ++c) {
    const double p = kByteValue[a[c]], q = kByteValue[a[c + C]];
    const double top = p + (q - p) * dx;
    double v = top;
    if (dy != 0.0) {
      const double p2 = kByteValue[b[c]], q2 = kByteValue[b[c + C]];
      v = top + ((p2 + (q2 - p2) * dx) - top) * dy;
    }
    o[c] = clamp_truncate(v);
  }
}

template <int C>
[[gnu::always_inline]] inline void bicubic_pixel(const uint8_t* src, int64_t stride, double dx,
                                                 double dy, uint8_t* o) {
  const uint8_t* r1 = src - C;  // tap (x0 - 1, y0)
  const std::array<double, 4> wy = cubic_weights(dy);
  if (dx == 0.0) {  // each row's value is its middle tap
#pragma GCC unroll 3
    for (int c = 0; c < C; ++c) {
      const uint8_t* t = r1 + C + c;
      o[c] = clamp_truncate(wy[0] * kByteValue[t[-stride]] + wy[1] * kByteValue[t[0]] +
                            wy[2] * kByteValue[t[stride]] + wy[3] * kByteValue[t[2 * stride]]);
    }
    return;
  }
  const std::array<double, 4> wx = cubic_weights(dx);
  auto row = [&](const uint8_t* r) [[gnu::always_inline]] {
    double s = 0;
    s += wx[0] * kByteValue[r[0]];
    s += wx[1] * kByteValue[r[C]];
    s += wx[2] * kByteValue[r[2 * C]];
    s += wx[3] * kByteValue[r[3 * C]];
    return s;
  };
#pragma GCC unroll 3
  for (int c = 0; c < C; ++c) {
    const uint8_t* r = r1 + c;
    if (dy == 0.0) {
      o[c] = clamp_truncate(row(r));
      continue;
    }
    const double h0 = row(r - stride), h1 = row(r), h2 = row(r + stride), h3 = row(r + 2 * stride);
    o[c] = clamp_truncate(wy[0] * h0 + wy[1] * h1 + wy[2] * h2 + wy[3] * h3);
  }
}

// Output row by output row: the sample points first (row_points), then runs of pixels.
// A pixel whose point lies outside gets `fill`; one whose filter taps reach outside the image goes
// through the clamping sampler; an interior pixel starts a run that extends while the next pixel's
// point is this one's moved by exactly one column: px[e] - (e - x) == px[x], py[e] == py[x]. For
// px[x] >= 1 (interior) the subtraction is exact (a multiple of px[e]'s ulp, no larger than
// px[e]), so equality means the same fractional offsets and source row, and columns moving by one:
// the run's bytes are one fixed filter (translations and ShearX give whole rows; rotations and
// ShearY lone pixels).
#if defined(__x86_64__)
// bicubic_pixel for RGB with AVX2: the three channels in lanes 0-2 of a 4-double vector (lane 3
// holds the next pixel's byte, computed and dropped). Per lane the same operations in the same
// order as the scalar definition (0 + w0 b0 + w1 b1 + w2 b2 + w3 b3 per row, then the rows'
// weighted sum left to right; no fused multiply-add), so the same bits; the +-0 terms of a zero
// offset, which the scalar path skips, do not change a finite sum. Reads 4 bytes at each tap: the
// caller keeps the last one inside the buffer.
[[gnu::target("avx2"), gnu::always_inline]] inline __m256d load4_avx2(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_cvtepi32_pd(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(v)));
}

[[gnu::target("avx2"), gnu::always_inline]] inline __m256d cubic_row_avx2(const uint8_t* r,
                                                                          const __m256d* w) {
  __m256d s = _mm256_setzero_pd();
  s = _mm256_add_pd(s, _mm256_mul_pd(w[0], load4_avx2(r)));
  s = _mm256_add_pd(s, _mm256_mul_pd(w[1], load4_avx2(r + 3)));
  s = _mm256_add_pd(s, _mm256_mul_pd(w[2], load4_avx2(r + 6)));
  s = _mm256_add_pd(s, _mm256_mul_pd(w[3], load4_avx2(r + 9)));
  return s;
}

[[gnu::target("avx2")]] void bicubic_pixel_rgb_avx2(const uint8_t* src, int64_t stride, double dx,
                                                    double dy, uint8_t* o) {
  const std::array<double, 4> wx = cubic_weights(dx), wy = cubic_weights(dy);
  const __m256d w[4] = {_mm256_set1_pd(wx[0]), _mm256_set1_pd(wx[1]), _mm256_set1_pd(wx[2]),
                        _mm256_set1_pd(wx[3])};
  const uint8_t* r1 = src - 3;  // tap (x0 - 1, y0)
  const __m256d h0 = cubic_row_avx2(r1 - stride, w), h1 = cubic_row_avx2(r1, w),
                h2 = cubic_row_avx2(r1 + stride, w), h3 = cubic_row_avx2(r1 + 2 * stride, w);
  __m256d v = _mm256_mul_pd(_mm256_set1_pd(wy[0]), h0);
  v = _mm256_add_pd(v, _mm256_mul_pd(_mm256_set1_pd(wy[1]), h1));
  v = _mm256_add_pd(v, _mm256_mul_pd(_mm256_set1_pd(wy[2]), h2));
  v = _mm256_add_pd(v, _mm256_mul_pd(_mm256_set1_pd(wy[3]), h3));
  // clamp_truncate: <= 0 -> 0, >= 255 -> 255, else truncated
  v = _mm256_min_pd(_mm256_max_pd(v, _mm256_setzero_pd()), _mm256_set1_pd(255.0));
  const __m128i t = _mm256_cvttpd_epi32(v);
  const int32_t bytes = _mm_cvtsi128_si32(_mm_packus_epi16(_mm_packus_epi32(t, t), t));
  std::memcpy(o, &bytes, 3);
}

bool cpu_has_avx2() {
  __builtin_cpu_init();  // this may run before libgcc's own initialiser
  return __builtin_cpu_supports("avx2");
}
const bool kHaveAvx2 = cpu_has_avx2();
bool g_affine_avx2 = kHaveAvx2;  // affine_simd_for_tests() can turn the AVX2 path off
#else
constexpr bool kHaveAvx2 = false;
bool g_affine_avx2 = false;
void bicubic_pixel_rgb_avx2(const uint8_t*, int64_t, double, double, uint8_t*) {}
#endif

template <int C>
void affine_impl(const Image& img, const std::array<double, 6>& m, Interp interp, const Fill& fill,
                 Image& out) {
  const int64_t H = img.height, W = img.width, stride = W * C;
  const double Wd = static_cast<double>(W), Hd = static_cast<double>(H);
  // the taps a filter reads around floor(s): [x0 - lo, x0 + hi]
  const int64_t lo = interp == Interp::bicubic ? 1 : 0, hi = interp == Interp::bicubic ? 2 : 1;
  const uint8_t* in = img.pixels.data();
  const uint8_t* in_end = in + img.pixels.size();
  std::vector<double> pxs(static_cast<size_t>(W)), pys(static_cast<size_t>(W));
  for (int64_t y = 0; y < H; ++y) {
    row_points(m, y, W, pxs.data(), pys.data());
    const double* px = pxs.data();
    const double* py = pys.data();
    auto inside = [&](int64_t x) {
      return px[x] >= 0.0 && px[x] < Wd && py[x] >= 0.0 && py[x] < Hd;
    };
    uint8_t* orow = out.pixels.data() + y * stride;
    for (int64_t x = 0; x < W;) {
      uint8_t* o = orow + x * C;
      if (!inside(x)) {
        for (; x < W && !inside(x); ++x, o += C)
          for (int c = 0; c < C; ++c) o[c] = fill[size_t(c)];
        continue;
      }
      if (interp == Interp::nearest) {  // the pixel containing p
        const uint8_t* s =
            in + static_cast<int64_t>(py[x]) * stride + static_cast<int64_t>(px[x]) * C;
        for (int c = 0; c < C; ++c) o[c] = s[c];
        ++x;
        continue;
      }
      const double sx = px[x] - 0.5, sy = py[x] - 0.5;
      const int64_t x0 = floor_i64(sx), y0 = floor_i64(sy);
      const double dx = sx - static_cast<double>(x0), dy = sy - static_cast<double>(y0);
      if (!(x0 - lo >= 0 && x0 + hi < W && y0 - lo >= 0 && y0 + hi < H)) {
        if (interp == Interp::bilinear)
          sample_bilinear<C>(in, H, W, x0, y0, dx, dy, o);
        else
          sample_bicubic<C>(in, H, W, x0, y0, dx, dy, o);
        ++x;
        continue;
      }
      // Interior: x0 + k + hi < W keeps the run's taps inside (see the comment above).
      const int64_t end = std::min(W, x + (W - hi - x0));
      int64_t e = x + 1;
      while (e < end && px[e] - static_cast<double>(e - x) == px[x] && py[e] == py[x]) ++e;
      const uint8_t* src = in + y0 * stride + x0 * C;
      if (e == x + 1) {  // a lone pixel (rotations, ShearY): no run set-up
        if (interp == Interp::bilinear)
          bilinear_pixel<C>(src, stride, dx, dy, o);
        else if (C == 3 && g_affine_avx2 && src + 2 * stride + 2 * C + 3 < in_end)  // loads inside
          bicubic_pixel_rgb_avx2(src, stride, dx, dy, o);
        else
          bicubic_pixel<C>(src, stride, dx, dy, o);
      } else if (interp == Interp::bilinear) {
        bilinear_run<C>(src, stride, dx, dy, o, (e - x) * C);
      } else {
        bicubic_run<C>(src, stride, dx, dy, o, (e - x) * C);
      }
      x = e;
    }
  }
}

// Rows become columns: out(x, y) = img(y, x), all channels.
template <int C>
void transpose_impl(const uint8_t* in, int64_t H, int64_t W, uint8_t* o) {
  constexpr int64_t kBlock = 32;  // tiles that stay in cache on both sides
  for (int64_t y0 = 0; y0 < H; y0 += kBlock)
    for (int64_t x0 = 0; x0 < W; x0 += kBlock) {
      const int64_t ye = std::min(H, y0 + kBlock), xe = std::min(W, x0 + kBlock);
      for (int64_t x = x0; x < xe; ++x) {
        uint8_t* d = o + (x * H + y0) * C;
        const uint8_t* s = in + (y0 * W + x) * C;
        for (int64_t y = y0; y < ye; ++y, d += C, s += W * C)
          for (int c = 0; c < C; ++c) d[c] = s[c];
      }
    }
}

Image transpose(const Image& img) {
  Image out{img.width, img.height, img.channels, std::vector<uint8_t>(img.pixels.size())};
  if (img.channels == 3)
    transpose_impl<3>(img.pixels.data(), img.height, img.width, out.pixels.data());
  else
    transpose_impl<1>(img.pixels.data(), img.height, img.width, out.pixels.data());
  return out;
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

namespace {

// PIL's RGB -> HSV of one pixel (libImaging/Convert.c, after colorsys), its float and double
// steps kept as they are there: the hue and saturation bytes are truncated, not rounded.
std::array<uint8_t, 3> pil_hsv(uint8_t r, uint8_t g, uint8_t b) {
  const uint8_t max = std::max({r, g, b}), min = std::min({r, g, b});
  if (max == min) return {0, 0, max};
  const float range = float(max - min);
  const float s = range / float(max);
  const float rc = float(max - r) / range, gc = float(max - g) / range, bc = float(max - b) / range;
  float h = r == max ? bc - gc : g == max ? float(2.0 + rc - bc) : float(4.0 + gc - rc);
  h = float(std::fmod(h / 6.0 + 1.0, 1.0));
  return {clamp_u8(int64_t(h * 255.0)), clamp_u8(int64_t(s * 255.0)), max};
}

// PIL's HSV -> RGB of one pixel (the same file), rounding each channel.
std::array<uint8_t, 3> pil_rgb(uint8_t h, uint8_t s, uint8_t v) {
  if (s == 0) return {v, v, v};
  const int i = int(std::floor(float(h) * 6.0 / 255.0));
  const float f = float(float(h) * 6.0 / 255.0 - float(i));
  const float fs = float(float(s) / 255.0);
  const uint8_t p = clamp_u8(int64_t(std::round(float(v) * (1.0 - fs))));
  const uint8_t q = clamp_u8(int64_t(std::round(float(v) * (1.0 - fs * f))));
  const uint8_t t = clamp_u8(int64_t(std::round(float(v) * (1.0 - fs * (1.0 - f)))));
  switch (i % 6) {
    case 0: return {v, t, p};
    case 1: return {q, v, p};
    case 2: return {p, v, t};
    case 3: return {p, q, v};
    case 4: return {t, p, v};
    default: return {v, p, q};
  }
}

}  // namespace

Image adjust_hue(const Image& img, double factor) {
  check_image("adjust_hue", img);
  HG_CHECK(factor >= -0.5 && factor <= 0.5, "adjust_hue: factor must be in [-0.5, 0.5], got ",
           factor);
  if (img.channels == 1) return img;  // torchvision returns an "L" image as it is
  // numpy's uint8 of the float hue_factor * 255: truncated, then taken modulo 256
  const auto shift = static_cast<uint8_t>(static_cast<int64_t>(factor * 255.0));
  Image out = same_shape(img);
  const uint8_t* in = img.pixels.data();
  uint8_t* o = out.pixels.data();
  for (size_t i = 0, n = img.pixels.size(); i < n; i += 3) {
    const std::array<uint8_t, 3> hsv = pil_hsv(in[i], in[i + 1], in[i + 2]);
    const std::array<uint8_t, 3> rgb = pil_rgb(uint8_t(hsv[0] + shift), hsv[1], hsv[2]);
    std::copy(rgb.begin(), rgb.end(), o + i);
  }
  return out;
}

Image affine(const Image& img, const std::array<double, 6>& m, Interp interp, const Fill& fill) {
  check_image("affine", img);
  HG_CHECK(img.height < (1 << 30) && img.width < (1 << 30), "affine: image ", img.height, "x",
           img.width, " is too large (sides must be < 2^30)");
  auto run = [&](const Image& src, const std::array<double, 6>& mat) {
    Image out = same_shape(src);
    if (src.channels == 3)
      affine_impl<3>(src, mat, interp, fill, out);
    else
      affine_impl<1>(src, mat, interp, fill, out);
    return out;
  };
  // A vertical shear (1, 0, 0, f, 1, 0) gives every pixel of a row its own vertical offset (no
  // runs). On the transposed image it is the horizontal shear (1, f, 0, 0, 1, 0), whose rows are
  // runs: p' = (v + f u, u) is p = (u, f u + v) swapped exactly (1 u, 0 v and + 0 are exact, and
  // the sum commutes), and the filter's arithmetic is the same term for term (PIL's repeated rows
  // below the image are the clamped columns; a zero offset's skipped terms are +-0).
  if (m[0] == 1 && m[1] == 0 && m[2] == 0 && m[3] != 0 && m[4] == 1 && m[5] == 0 &&
      std::isfinite(m[3]))
    return transpose(run(transpose(img), {1, m[3], 0, 0, 1, 0}));
  return run(img, m);
}

bool affine_simd_for_tests(bool on) {
  const bool was = g_affine_avx2;
  g_affine_avx2 = on && kHaveAvx2;
  return was;
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
