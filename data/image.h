// An 8-bit image in memory (height, width, channels) and reading / writing image files. A file's
// format is sniffed from its first bytes, never its name: JPEG goes to libjpeg-turbo (data/jpeg_decode.h)
// unless JpegDecoder::stb is asked for, PNG / BMP / PPM / PGM to stb_image. This is what datasets
// hand to the transforms; the transforms produce the float tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/utf8.h"

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
  // (the name shown escaped, core/utf8.h printable: a file name's control characters would
  // reach the terminal with the message; path() is the file's own)
  CorruptImage(const std::string& path, const std::string& reason)
      : Error(str("cannot decode image '", printable(path), "': ", reason)), path_(path) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// A region of a source image in pixel units: x, y of the top-left corner, width w, height h.
struct CropBox {
  double x = 0, y = 0, w = 0, h = 0;
};

/// What a file holds, from its first bytes.
enum class ImageFormat { jpeg, png, bmp, pnm, unknown };
ImageFormat sniff_image_format(const uint8_t* data, size_t size);
const char* format_name(ImageFormat f);  ///< "jpeg", "png", "bmp", "pnm", "unknown"

/// How JPEG files are decoded (config key jpeg_decoder): libjpeg-turbo with DCT-domain downscaling and
/// crop-on-decode when a crop is known (turbo), libjpeg-turbo always whole and full size (turbo_full),
/// or stb_image (stb, the decoder before libjpeg-turbo, kept for comparison).
enum class JpegDecoder { turbo, turbo_full, stb };
/// Parses "turbo" / "turbo_full" / "stb"; throws hg::Error otherwise.
JpegDecoder parse_jpeg_decoder(const std::string& s);
const char* decoder_name(JpegDecoder d);

/// The whole file. Throws CorruptImage naming the path when it cannot be opened or read.
std::vector<uint8_t> read_file_bytes(const std::string& path);
/// The error for a file of ImageFormat::unknown: names the path and shows its first bytes.
CorruptImage not_an_image(const std::string& path, const std::vector<uint8_t>& bytes);

/// Decodes an in-memory PNG / BMP / PPM / PGM / JPEG with stb_image into `channels` (1 or 3). `path`
/// only names the file in errors. Throws CorruptImage if stb cannot decode it.
Image decode_with_stb(const uint8_t* data, size_t size, const std::string& path, int channels);

/// Decodes a JPEG / PNG / BMP / PPM / PGM file (format sniffed from its bytes) and converts it to
/// `channels` (1 or 3): gray is replicated to RGB, alpha is dropped (as PIL's convert("RGB")), colour
/// becomes luma (libjpeg-turbo: 0.299 R + 0.587 G + 0.114 B; stb: (77 R + 150 G + 29 B) / 256), CMYK
/// JPEGs become RGB (jpeg_decode.h). Throws CorruptImage naming the file if it cannot: unreadable,
/// not an image of these formats (whatever its name), corrupt or truncated.
Image read_image(const std::string& path, int channels, JpegDecoder jpeg = JpegDecoder::turbo);

/// Reads only the header (fast): true when stb recognises the file; otherwise false and `reason`.
bool probe_image(const std::string& path, std::string* reason);

/// Writes 8-bit images with stb_image_write; throws hg::Error naming the path on failure.
void write_png(const std::string& path, const Image& img);
void write_jpeg(const std::string& path, const Image& img, int quality = 95);
void write_bmp(const std::string& path, const Image& img);

}  // namespace hg::data
