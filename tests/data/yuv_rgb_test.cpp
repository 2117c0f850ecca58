// The YCbCr-to-RGB batch conversion's CPU reference (kernels/yuv_rgb.h): the JFIF formula at known
// colours, a round trip from RGB, which chroma sample each pixel reads at every subsampling and odd
// size, grayscale items, and items that leave the rest of the destination alone.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/yuv_rgb.h"

namespace hg {
namespace {

using kernels::YuvItem;

TEST(YuvToRgb, KnownColours) {
  const auto px = [](int y, int cb, int cr) { return kernels::yuv_to_rgb_pixel(y, cb, cr); };
  const kernels::YuvRgb grey = px(128, 128, 128);
  EXPECT_EQ(grey.r, 128);
  EXPECT_EQ(grey.g, 128);
  EXPECT_EQ(grey.b, 128);
  // Y 0, Cr 255: R = 1.402 * 127 = 178.05, G = -0.714136 * 127 < 0 (clamped), B = 0
  const kernels::YuvRgb red = px(0, 128, 255);
  EXPECT_EQ(red.r, 178);
  EXPECT_EQ(red.g, 0);
  EXPECT_EQ(red.b, 0);
  // Y 255, Cb 255: B = 255 + 1.772 * 127 > 255 (clamped), G = 255 - 0.344136 * 127 = 211.3
  const kernels::YuvRgb blue = px(255, 255, 128);
  EXPECT_EQ(blue.r, 255);
  EXPECT_EQ(blue.g, 211);
  EXPECT_EQ(blue.b, 255);
}

TEST(YuvToRgb, InvertsTheJfifForwardTransform) {
  std::mt19937 gen(7);
  std::uniform_int_distribution<int> d(0, 255);
  int worst = 0;
  for (int k = 0; k < 20000; ++k) {
    const double R = d(gen), G = d(gen), B = d(gen);
    // JFIF's RGB -> YCbCr, rounded to 8 bits as an encoder stores it
    const auto q = [](double v) { return int(std::lround(std::fmin(255.0, std::fmax(0.0, v)))); };
    const int Y = q(0.299 * R + 0.587 * G + 0.114 * B);
    const int Cb = q(128 - 0.168736 * R - 0.331264 * G + 0.5 * B);
    const int Cr = q(128 + 0.5 * R - 0.418688 * G - 0.081312 * B);
    const kernels::YuvRgb p = kernels::yuv_to_rgb_pixel(Y, Cb, Cr);
    worst = std::max({worst, std::abs(p.r - int(R)), std::abs(p.g - int(G)), std::abs(p.b - int(B))});
  }
  EXPECT_LE(worst, 2);  // the 8-bit YCbCr rounding alone moves a channel by up to ~1.5 levels
  EXPECT_GE(worst, 1);  // and it does move some
}

// An item whose chroma planes say where they were read: Cb = 128 + column, Cr = 128 + row (small
// values), Y = 128, so R - 128 = round(1.402 * row) and B - 128 = round(1.772 * column).
TEST(YuvToRgb, ReadsTheNearestChromaSampleAtEverySubsampling) {
  for (int sx = 0; sx <= 2; ++sx)
    for (int sy = 0; sy <= 1; ++sy)
      for (const auto& [h, w] : std::vector<std::pair<int, int>>{{7, 9}, {8, 8}, {1, 5}, {13, 3}}) {
        SCOPED_TRACE(testing::Message() << "shift " << sx << "," << sy << " size " << h << "x" << w);
        YuvItem it;
        it.width = w, it.height = h, it.shift_x = sx, it.shift_y = sy;
        it.c_width = (w + (1 << sx) - 1) >> sx;
        it.c_height = (h + (1 << sy) - 1) >> sy;
        it.y_pitch = w + 3;
        it.c_pitch = it.c_width + 2;
        it.y_offset = 5;
        it.cb_offset = it.y_offset + int64_t(it.y_pitch) * h;
        it.cr_offset = it.cb_offset + int64_t(it.c_pitch) * it.c_height;
        std::vector<uint8_t> src(size_t(it.cr_offset + int64_t(it.c_pitch) * it.c_height), 0);
        for (int y = 0; y < h; ++y)
          for (int x = 0; x < w; ++x) src[size_t(it.y_offset + y * it.y_pitch + x)] = 128;
        for (int y = 0; y < it.c_height; ++y)
          for (int x = 0; x < it.c_width; ++x) {
            src[size_t(it.cb_offset + y * it.c_pitch + x)] = uint8_t(128 + x);
            src[size_t(it.cr_offset + y * it.c_pitch + x)] = uint8_t(128 + y);
          }
        it.dst_offset = 2;
        std::vector<uint8_t> dst(size_t(2 + h * w * 3 + 2), 7);
        kernels::cpu::yuv_to_rgb(src.data(), &it, 1, dst.data());
        EXPECT_EQ(dst[0], 7);
        EXPECT_EQ(dst[dst.size() - 1], 7);  // nothing written outside the item
        for (int y = 0; y < h; ++y)
          for (int x = 0; x < w; ++x) {
            const uint8_t* p = dst.data() + 2 + (y * w + x) * 3;
            EXPECT_EQ(p[0], 128 + int(std::lround(1.402 * (y >> sy))));
            EXPECT_EQ(p[2], 128 + int(std::lround(1.772 * (x >> sx))));
          }
      }
}

TEST(YuvToRgb, GrayItemsCopyLuma) {
  YuvItem it;
  it.width = 3, it.height = 2, it.gray = 1, it.y_pitch = 4;
  const std::vector<uint8_t> src = {10, 20, 30, 99, 40, 50, 60, 99};
  std::vector<uint8_t> dst(18);
  kernels::cpu::yuv_to_rgb(src.data(), &it, 1, dst.data());
  const std::vector<uint8_t> want = {10, 10, 10, 20, 20, 20, 30, 30, 30,
                                     40, 40, 40, 50, 50, 50, 60, 60, 60};
  EXPECT_EQ(dst, want);
}

}  // namespace
}  // namespace hg
