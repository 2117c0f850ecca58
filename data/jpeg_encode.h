// JPEG encoding with libjpeg-turbo: baseline or progressive, gray, YCbCr or CMYK, for test images and
// benchmark folders (stb_image_write's encoder makes baseline 3-channel files only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/image.h"

namespace hg::data {

struct JpegEncodeOptions {
  int quality = 90;          ///< 1..100 (libjpeg's scale)
  bool progressive = false;  ///< a progressive scan script (libjpeg's default one) instead of one baseline scan
  /// Store a 3-channel image as Adobe-style inverted CMYK (ink = 255 - RGB, K = the common part), as
  /// Photoshop does; decoders must undo it. Ignored for 1-channel images.
  bool cmyk = false;
  /// Chroma subsampling of YCbCr: 1 = 4:4:4, 2 = 4:2:0 (libjpeg's default).
  int chroma_subsampling = 2;
};

/// Encodes `img` (1 or 3 channels). Throws hg::Error for a bad image or options.
std::vector<uint8_t> encode_jpeg(const Image& img, const JpegEncodeOptions& opts = {});

}  // namespace hg::data
