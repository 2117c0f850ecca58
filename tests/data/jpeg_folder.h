// A folder of every kind of file the image-folder loader meets, for the data tests on the CPU
// (tests/data/jpeg_loader_test.cpp) and on the GPU (tests/gpu/gpu_loader_test.cpp): per class a
// baseline RGB JPEG, a progressive one, a grayscale one, a CMYK one, a PNG named .jpg and another
// baseline JPEG, each holding a smooth, asymmetric colour field (a flip or another crop changes it
// a lot, a decoder's rounding only a little).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/image.h"
#include "data/jpeg_encode.h"
#include "temp_dir.h"

namespace hg::test {

/// An h x w image of c 8-bit channels: sines along x and y, shifted by phase and channel, plus a
/// ramp in x (so that a horizontal flip is far from the original).
inline data::Image smooth_image(int64_t h, int64_t w, int64_t c, double phase) {
  data::Image img{h, w, c, std::vector<uint8_t>(static_cast<size_t>(h * w * c))};
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k) {
        const double v =
            128 + 70 * std::sin(x / 17.0 + phase + k) * std::cos(y / 23.0 - k) + 0.3 * (x - w / 2);
        img.pixels[size_t((y * w + x) * c + k)] = static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
      }
  return img;
}

/// Pixel sizes of write_mixed_folder's files: file n (counted over the classes in order) is
/// (h0 + dh n) x (w0 + dw n), except the grayscale ones, gray_h x gray_w.
struct MixedFolderSizes {
  int64_t h0, dh, w0, dw, gray_h, gray_w;
};

/// Writes root/train/<class>/img<k>.jpg, k = 0..5, for each class: k = 1 progressive, 2 grayscale,
/// 3 CMYK, 4 a PNG with a .jpg name, 0 and 5 baseline RGB; JPEG quality 93.
inline void write_mixed_folder(const std::filesystem::path& root,
                               const std::vector<std::string>& classes, const MixedFolderSizes& s) {
  int n = 0;
  for (const std::string& cls : classes) {
    std::filesystem::create_directories(root / "train" / cls);
    for (int k = 0; k < 6; ++k, ++n) {
      const std::string path =
          (root / "train" / cls / ("img" + std::to_string(k) + ".jpg")).string();
      const data::Image rgb = smooth_image(s.h0 + s.dh * n, s.w0 + s.dw * n, 3, 0.37 * n);
      data::JpegEncodeOptions o;
      o.quality = 93;
      data::Image img = rgb;
      if (k == 1) o.progressive = true;
      if (k == 2) img = smooth_image(s.gray_h, s.gray_w, 1, n);
      if (k == 3) o.cmyk = true;
      if (k == 4) {
        data::write_png(path, rgb);
        continue;
      }
      const auto bytes = data::encode_jpeg(img, o);
      write_bytes(path, std::string(bytes.begin(), bytes.end()));
    }
  }
}

}  // namespace hg::test
