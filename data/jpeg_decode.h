// JPEG decoding with libjpeg-turbo (its libjpeg API, which unlike TurboJPEG 2.x can decode part of an
// image): the header alone, or the pixels of one region at 1/1, 1/2, 1/4 or 1/8 scale.
//
// * DCT-domain scaling: at 1/s the inverse DCT makes each 8x8 block directly as an (8/s)x(8/s) block,
//   so a 1/2-scale decode does about a quarter of the IDCT, upsampling and colour work.
// * Crop-on-decode: rows above the region are skipped (entropy-decoded only), columns outside it are
//   neither inverse-transformed nor colour-converted, and rows below it are not read at all when the
//   file ends with its end-of-image marker (otherwise they are read, so truncation is always found).
// The pixels of a region equal the same pixels of a whole-image decode at that scale (tested).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "data/image.h"

namespace hg::data {

struct JpegHeader {
  int64_t width = 0, height = 0;  ///< full size, pixels
  int components = 0;             ///< 1 (gray), 3 (YCbCr or RGB), 4 (CMYK or YCCK)
  bool progressive = false;
  bool adobe = false;             ///< an Adobe APP14 marker: 4-component data is stored inverted
};

/// Columns [x0, x1) and rows [y0, y1) of an image, pixels.
struct PixelRect {
  int64_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool empty() const { return x1 <= x0 || y1 <= y0; }
};

/// A decoded region: `image` covers at least the asked-for rectangle (libjpeg widens a column crop
/// to its block grid); its top-left pixel is (x0, y0) of the image decoded at 1/scale.
struct JpegRegion {
  Image image;
  int64_t x0 = 0, y0 = 0;
};

/// The most pixels an image may have (16384 x 16384; any format): more is an error, not an
/// allocation of gigabytes per loader worker.
inline constexpr int64_t kMaxImagePixels = int64_t(1) << 28;

/// True when `data` starts with a JPEG start-of-image marker and a marker after it (FF D8 FF).
bool is_jpeg(const uint8_t* data, size_t size);

/// A marker segment of a JPEG file: its marker (the byte after FF) and where its bytes lie, as
/// offsets into the data it was read from.
struct JpegSegment {
  uint8_t marker = 0;  ///< C0..CF but C4, C8, CC: a frame header (SOFn); DA: a scan; D9: the end
  size_t payload = 0;  ///< the first byte after the marker and its length field
  size_t end = 0;      ///< just past the segment; == payload for a marker without a length
};

/// The segment whose marker starts at `data[at]`: FF, any fill bytes FF, the marker, then a 16-bit
/// big-endian length that counts its own two bytes (none for 01 and D0..D9, which stand alone).
/// The one reading of a segment's header for the walks over a file's segments (image.cpp's frame
/// size, image_complete.h's jpeg_reaches_end), each of which decides what to do between segments.
/// Nothing when `data[at]` is not FF, the data ends before the marker or its length field, or the
/// length is below 2 (no error is thrown). `end` may lie past `size`: a segment cut short.
std::optional<JpegSegment> jpeg_segment_at(const uint8_t* data, size_t size, size_t at);

/// True when an end-of-image marker (FF D9) lies within the last 64 bytes of `data` (files may
/// carry a few bytes of padding after it): a cheap test for truncation before handing a file to a
/// decoder that would not report it, and decode_jpeg's test for whether it may skip the rows below
/// a region. Entropy-coded data never holds FF D9 (an FF there is stuffed with 00).
bool jpeg_has_end_marker(const uint8_t* data, size_t size);

/// The frame header. Throws CorruptImage naming `path` when libjpeg cannot parse it.
JpegHeader read_jpeg_header(const uint8_t* data, size_t size, const std::string& path);

/// Side of a `full`-pixel side decoded at 1/scale: ceil(full / scale), libjpeg's rounding.
int64_t jpeg_scaled_size(int64_t full, int scale);

/// Decodes `want` (pixels of the image at 1/scale, clipped to it; an empty rect = the whole image)
/// at 1/scale, scale in {1, 2, 4, 8}, into `channels` (1 or 3) 8-bit channels: gray is replicated,
/// colour becomes luma Y = 0.299 R + 0.587 G + 0.114 B (JFIF) for one channel, CMYK/YCCK becomes
/// RGB = (255 - C)(255 - K) / 255 per channel (after undoing Adobe's inversion), as PIL converts
/// it. Throws CorruptImage naming `path` for data libjpeg rejects and for truncated files (the data
/// ends before the end-of-image marker); hg::Error for a bad scale or channel count. Corrupt data
/// libjpeg decodes anyway (its warnings) is logged at warn level naming `path`, once per path per
/// process.
JpegRegion decode_jpeg(const uint8_t* data, size_t size, const std::string& path, int channels, int scale,
                       PixelRect want = {});

}  // namespace hg::data
