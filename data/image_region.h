// Decoding only what a crop needs. A transform that knows its crop box from the image size alone
// (random-resized crop, center crop) hands the decoder a chooser; for a JPEG the decoder reads the
// header, asks for the box, and decodes just that region, at 1/2, 1/4 or 1/8 scale when the box is at
// least that many times the output (libjpeg-turbo's DCT scaling). Other formats decode whole.
#pragma once

#include <functional>
#include <string>

#include "data/image.h"
#include "data/jpeg_decode.h"

namespace hg::data {

/// What a transform will read: `box` (pixels of the full-size image) resampled to out_h x out_w.
struct CropRequest {
  CropBox box;
  int64_t out_h = 0, out_w = 0;
};
/// Called once with the full image size; must depend on (height, width) only (no hidden state), so the
/// same file gives the same crop whichever decoder runs.
using CropChooser = std::function<CropRequest(int64_t height, int64_t width)>;

/// How a file was decoded.
struct DecodeInfo {
  ImageFormat format = ImageFormat::unknown;
  bool turbo = false;      ///< by libjpeg-turbo; else by stb_image (or not from a file)
  int scale = 1;           ///< JPEG DCT scale denominator: 1, 2, 4 or 8
  int64_t file_bytes = 0;  ///< compressed bytes read
  /// "jpeg turbo 1/2", "jpeg stb", "png stb", "memory" (a sample not decoded from a file).
  std::string key() const;
};

struct ImageRegion {
  Image image;      ///< the pixels the box needs (a region, or the whole image), maybe at reduced scale
  CropBox box;      ///< the chooser's box in `image`'s pixels
  DecodeInfo info;
};

/// The largest s in {8, 4, 2} with box.w / s >= out_w and box.h / s >= out_h, else 1: the reduced
/// image still has at least one pixel per output pixel (the rule of PIL's Image.draft).
int jpeg_scale_for(const CropRequest& req);

/// The pixels that resampling `box` (pixels of a (height, width) image) to out_h x out_w may read with
/// any filter, plus 2 pixels (libjpeg's fancy upsampling lacks its neighbour at a region's edge),
/// clipped to the image. Never empty for a box that overlaps the image.
PixelRect crop_reach_rect(const CropBox& box, int64_t out_h, int64_t out_w, int64_t height, int64_t width);

/// Reads `path`, calls `choose` once with the full image size, and decodes what its box needs into
/// `channels` (1 or 3): with JpegDecoder::turbo a JPEG is decoded at jpeg_scale_for() scale and only
/// the box plus the resampling filter's reach; with turbo_full or stb, and for other formats, the
/// whole image at full size (box unchanged). Resampling `box` of `image` then equals resampling the
/// chooser's box of the whole image decoded at that scale. Throws CorruptImage as read_image does.
ImageRegion read_image_region(const std::string& path, int channels, const CropChooser& choose,
                              JpegDecoder jpeg = JpegDecoder::turbo);
/// As read_image_region, for a file already read into `bytes` (`path` names it in errors).
ImageRegion decode_image_region(const std::vector<uint8_t>& bytes, const std::string& path,
                                int channels, const CropChooser& choose,
                                JpegDecoder jpeg = JpegDecoder::turbo);

}  // namespace hg::data
