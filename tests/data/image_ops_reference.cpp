// The 8-bit ops as first written (see image_ops_reference.h): the oracle of the fast ops.
#include "image_ops_reference.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace hg::data::reference {
namespace {

using Lut = std::array<uint8_t, 256>;

void check_image(const char* op, const Image& img) {
  HG_CHECK(img.height > 0 && img.width > 0, op, ": empty image ", img.height, "x", img.width);
  HG_CHECK(img.channels == 1 || img.channels == 3, op, ": expected 1 or 3 channels, got ",
           img.channels);
  HG_CHECK(img.pixels.size() == static_cast<size_t>(img.height * img.width * img.channels), op,
           ": image holds ", img.pixels.size(), " bytes, expected ", img.height, "x", img.width,
           "x", img.channels);
}

uint8_t clamp_u8(int64_t v) { return static_cast<uint8_t>(std::clamp<int64_t>(v, 0, 255)); }

// One table per channel, built from that channel's histogram.
Image point_per_channel(const Image& img,
                        const std::function<Lut(const std::array<int64_t, 256>&)>& make) {
  const int64_t C = img.channels, n = img.height * img.width;
  Image out = img;
  for (int64_t c = 0; c < C; ++c) {
    std::array<int64_t, 256> hist{};
    for (int64_t p = 0; p < n; ++p) ++hist[img.pixels[size_t(p * C + c)]];
    const Lut lut = make(hist);
    for (int64_t p = 0; p < n; ++p)
      out.pixels[size_t(p * C + c)] = lut[img.pixels[size_t(p * C + c)]];
  }
  return out;
}

// One table for every channel.
Image point(const Image& img, const std::function<uint8_t(int)>& f) {
  Lut lut;
  for (int v = 0; v < 256; ++v) lut[size_t(v)] = f(v);
  Image out = img;
  for (uint8_t& p : out.pixels) p = lut[p];
  return out;
}

// PIL's ImagingBlend: a + factor * (b - a) in float, clamped, truncated.
Image blend(const Image& degenerate, const Image& img, double factor) {
  const float alpha = static_cast<float>(factor);
  Image out = img;
  for (size_t i = 0; i < out.pixels.size(); ++i) {
    const float a = degenerate.pixels[i], b = img.pixels[i];
    const float v = a + alpha * (b - a);
    out.pixels[i] = v <= 0.0f ? 0 : v >= 255.0f ? 255 : static_cast<uint8_t>(v);
  }
  return out;
}

// The a = -1 cubic convolution weights of the 4 taps at offsets -1, 0, 1, 2 from floor(p).
std::array<double, 4> cubic_weights(double d) {
  return {-d + 2 * d * d - d * d * d, 1 - 2 * d * d + d * d * d, d + d * d - d * d * d,
          -d * d + d * d * d};
}

}  // namespace

Image auto_contrast(const Image& img) {
  check_image("auto_contrast", img);
  return point_per_channel(img, [](const std::array<int64_t, 256>& h) {
    int lo = 0, hi = 255;
    while (lo < 256 && h[size_t(lo)] == 0) ++lo;
    while (hi >= 0 && h[size_t(hi)] == 0) --hi;
    Lut lut;
    for (int v = 0; v < 256; ++v) lut[size_t(v)] = static_cast<uint8_t>(v);
    if (hi <= lo) return lut;
    const double scale = 255.0 / (hi - lo), offset = -lo * scale;
    for (int v = 0; v < 256; ++v)
      lut[size_t(v)] = clamp_u8(static_cast<int64_t>(v * scale + offset));
    return lut;
  });
}

Image equalize(const Image& img) {
  check_image("equalize", img);
  return point_per_channel(img, [](const std::array<int64_t, 256>& h) {
    Lut lut;
    for (int v = 0; v < 256; ++v) lut[size_t(v)] = static_cast<uint8_t>(v);
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
  return point(img, [](int v) { return static_cast<uint8_t>(255 - v); });
}

Image posterize(const Image& img, int bits) {
  check_image("posterize", img);
  HG_CHECK(bits >= 0 && bits <= 8, "posterize: bits must be in [0, 8], got ", bits);
  const int mask = ~((1 << (8 - bits)) - 1) & 0xff;
  return point(img, [mask](int v) { return static_cast<uint8_t>(v & mask); });
}

Image solarize(const Image& img, int threshold) {
  check_image("solarize", img);
  HG_CHECK(threshold >= 0 && threshold <= 256, "solarize: threshold must be in [0, 256], got ",
           threshold);
  return point(img,
               [threshold](int v) { return static_cast<uint8_t>(v < threshold ? v : 255 - v); });
}

Image solarize_add(const Image& img, int add, int threshold) {
  check_image("solarize_add", img);
  return point(img, [add, threshold](int v) {
    return v < threshold ? clamp_u8(v + add) : static_cast<uint8_t>(v);
  });
}

Image adjust_color(const Image& img, double factor) {
  check_image("adjust_color", img);
  if (img.channels == 1) return img;  // gray -> gray -> blend with itself
  Image gray = img;
  for (size_t p = 0; p < img.pixels.size(); p += 3) {
    const uint8_t l = luma(img.pixels[p], img.pixels[p + 1], img.pixels[p + 2]);
    gray.pixels[p] = gray.pixels[p + 1] = gray.pixels[p + 2] = l;
  }
  return blend(gray, img, factor);
}

Image adjust_contrast(const Image& img, double factor) {
  check_image("adjust_contrast", img);
  const int64_t C = img.channels, n = img.height * img.width;
  double sum = 0;
  for (int64_t p = 0; p < n; ++p) {
    const uint8_t* px = img.pixels.data() + p * C;
    sum += C == 1 ? px[0] : luma(px[0], px[1], px[2]);
  }
  const auto mean = static_cast<uint8_t>(static_cast<int64_t>(sum / static_cast<double>(n) + 0.5));
  Image degenerate = img;
  std::fill(degenerate.pixels.begin(), degenerate.pixels.end(), mean);
  return blend(degenerate, img, factor);
}

Image adjust_brightness(const Image& img, double factor) {
  check_image("adjust_brightness", img);
  Image black = img;
  std::fill(black.pixels.begin(), black.pixels.end(), uint8_t{0});
  return blend(black, img, factor);
}

Image adjust_sharpness(const Image& img, double factor) {
  check_image("adjust_sharpness", img);
  const int64_t H = img.height, W = img.width, C = img.channels;
  Image smooth = img;  // the one-pixel border keeps its values (PIL's 3x3 filter)
  for (int64_t y = 1; y + 1 < H; ++y)
    for (int64_t x = 1; x + 1 < W; ++x)
      for (int64_t c = 0; c < C; ++c) {
        int64_t s = 4 * img.at(y, x, c);  // centre weight 5 = 1 + 4
        for (int64_t dy = -1; dy <= 1; ++dy)
          for (int64_t dx = -1; dx <= 1; ++dx) s += img.at(y + dy, x + dx, c);
        smooth.pixels[size_t((y * W + x) * C + c)] = clamp_u8((2 * s + 13) / 26);  // round(s / 13)
      }
  return blend(smooth, img, factor);
}

Image affine(const Image& img, const std::array<double, 6>& m, Interp interp, const Fill& fill) {
  check_image("affine", img);
  const int64_t H = img.height, W = img.width, C = img.channels;
  auto clip_x = [W](int64_t x) { return std::clamp<int64_t>(x, 0, W - 1); };
  auto clip_y = [H](int64_t y) { return std::clamp<int64_t>(y, 0, H - 1); };
  Image out = img;
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x) {
      const double u = static_cast<double>(x) + 0.5, v = static_cast<double>(y) + 0.5;
      const double px = m[0] * u + m[1] * v + m[2], py = m[3] * u + m[4] * v + m[5];
      uint8_t* o = out.pixels.data() + (y * W + x) * C;
      if (!(px >= 0.0 && px < static_cast<double>(W) && py >= 0.0 && py < static_cast<double>(H))) {
        for (int64_t c = 0; c < C; ++c) o[c] = fill[size_t(c)];
        continue;
      }
      if (interp == Interp::nearest) {
        for (int64_t c = 0; c < C; ++c) o[c] = img.at(int64_t(py), int64_t(px), c);
        continue;
      }
      const double sx = px - 0.5, sy = py - 0.5;
      const auto x0 = static_cast<int64_t>(std::floor(sx)),
                 y0 = static_cast<int64_t>(std::floor(sy));
      const double dx = sx - static_cast<double>(x0), dy = sy - static_cast<double>(y0);
      for (int64_t c = 0; c < C; ++c) {
        double v_out;
        if (interp == Interp::bilinear) {
          auto row = [&](int64_t yy) {
            const double a = img.at(clip_y(yy), clip_x(x0), c),
                         b = img.at(clip_y(yy), clip_x(x0 + 1), c);
            return a + (b - a) * dx;
          };
          const double top = row(y0), bottom = y0 + 1 < H ? row(y0 + 1) : top;  // PIL: no row below
          v_out = top + (bottom - top) * dy;
        } else {
          const std::array<double, 4> wx = cubic_weights(dx), wy = cubic_weights(dy);
          double rows[4];
          for (int k = 0; k < 4; ++k) {
            const int64_t yy = y0 - 1 + k;
            if (k > 0 && (yy < 0 || yy >= H)) {  // PIL repeats the previous row below the image
              rows[k] = rows[k - 1];
              continue;
            }
            rows[k] = 0;
            for (int j = 0; j < 4; ++j)
              rows[k] += wx[size_t(j)] * img.at(clip_y(yy), clip_x(x0 - 1 + j), c);
          }
          v_out = wy[0] * rows[0] + wy[1] * rows[1] + wy[2] * rows[2] + wy[3] * rows[3];
        }
        o[c] = v_out <= 0.0 ? 0 : v_out >= 255.0 ? 255 : static_cast<uint8_t>(v_out);
      }
    }
  return out;
}

uint8_t round_to_u8(float v) { return static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L)); }

}  // namespace hg::data::reference
