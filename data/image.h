// An 8-bit image in memory (height, width, channels) and reading / writing image files with stb.
// This is what datasets hand to the transforms; the transforms produce the float tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace hg::data {

/// 8-bit pixels, row-major (height, width, channels), channels 1 (gray), 3 (RGB) or 4 (RGBA).
struct Image {
  int64_t height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;  ///< height * width * channels bytes

  uint8_t at(int64_t y, int64_t x, int64_t c) const {
    return pixels[static_cast<size_t>((y * width + x) * channels + c)];
  }
};

/// An image file that cannot be decoded (corrupt, truncated, unsupported). Datasets catch it to skip
/// the file or re-throw it, as Config::corrupt_images says.
class CorruptImage : public Error {
 public:
  CorruptImage(const std::string& path, const std::string& reason)
      : Error(str("cannot decode image '", path, "': ", reason)), path_(path) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Decodes a jpg / jpeg / png / bmp / ppm (pgm) file with stb_image and converts it to `channels`
/// (1 or 3): gray is replicated to RGB, alpha is dropped (as PIL's convert("RGB")), RGB becomes gray
/// with stb's luma weights (77 R + 150 G + 29 B) / 256. Throws CorruptImage if it cannot.
Image read_image(const std::string& path, int channels);

/// Reads only the header (fast): true when stb recognises the file; otherwise false and `reason`.
bool probe_image(const std::string& path, std::string* reason);

/// Writes 8-bit images with stb_image_write; throws hg::Error naming the path on failure.
void write_png(const std::string& path, const Image& img);
void write_jpeg(const std::string& path, const Image& img, int quality = 95);
void write_bmp(const std::string& path, const Image& img);

}  // namespace hg::data
