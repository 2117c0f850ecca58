// Image file reading and writing through stb_image / stb_image_write. The stb implementations are
// compiled here and only here (the library exposes them to the app and the tests).
#include "data/image.h"

// stb is third-party code: its warnings are not ours to fix.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_JPEG
#define STBI_ONLY_PNG
#define STBI_ONLY_BMP
#define STBI_ONLY_PNM
#define STBI_FAILURE_USERMSG  // "Corrupt PNG", not "outofdata": the reasons users read
#include <stb_image.h>
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
#pragma GCC diagnostic pop

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/atomic_file.h"
#include "core/big_endian.h"

#include "data/image_complete.h"
#include "data/jpeg_decode.h"

namespace hg::data {

ImageFormat sniff_image_format(const uint8_t* d, size_t n) {
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (is_jpeg(d, n)) return ImageFormat::jpeg;
  if (n >= 8 && std::equal(kPng, kPng + 8, d)) return ImageFormat::png;
  if (n >= 2 && d[0] == 'B' && d[1] == 'M') return ImageFormat::bmp;
  if (n >= 2 && d[0] == 'P' && (d[1] == '5' || d[1] == '6')) return ImageFormat::pnm;  // binary PGM / PPM
  return ImageFormat::unknown;
}

const char* format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::jpeg: return "jpeg";
    case ImageFormat::png: return "png";
    case ImageFormat::bmp: return "bmp";
    case ImageFormat::pnm: return "pnm";
    default: return "unknown";
  }
}

JpegDecoder parse_jpeg_decoder(const std::string& s) {
  if (s == "turbo") return JpegDecoder::turbo;
  if (s == "turbo_full") return JpegDecoder::turbo_full;
  if (s == "stb") return JpegDecoder::stb;
  throw Error(str("jpeg_decoder: expected 'turbo', 'turbo_full' or 'stb', got '", s, "'"));
}

const char* decoder_name(JpegDecoder d) {
  switch (d) {
    case JpegDecoder::turbo: return "turbo";
    case JpegDecoder::turbo_full: return "turbo_full";
    default: return "stb";
  }
}

namespace {
// Why a binary PGM / PPM or an uncompressed BMP of `file_size` bytes is cut short (stb_image would
// decode it without an error, the missing pixels zeros or garbage), from its first `n` bytes;
// nothing when it is whole or not of those kinds.
std::optional<std::string> raster_cut_short(ImageFormat format, const uint8_t* head, size_t n,
                                            uint64_t file_size) {
  const std::optional<uint64_t> need = raster_file_size(format, head, n);
  if (!need || file_size >= *need) return std::nullopt;
  return str("a ", format_name(format), " cut short: its header describes ", *need,
             " bytes, the file holds ", file_size);
}

// A binary PGM / PPM whose maxval is not 255, as PIL reads it (`h` its header; the file is whole):
// each sample v becomes round(v / maxval * 255) (Python's round, half to even), at most 255; a
// PGM's with maxval above 255 becomes PIL's 16-bit value round(v / maxval * 65535), of which the
// high byte is kept, as for a 16-bit gray PNG here. (A deliberate difference from timm: PIL's
// convert("RGB") clips such a 16-bit value to 255, so most of those images come out white.)
// stb_image leaves 8-bit samples as they are (a maxval-100 PGM came out dark) and reads 16-bit
// ones little-endian (v2.27), keeping the low byte. Then converted to `channels` as stb converts.
Image decode_pnm_scaled(const uint8_t* data, const PnmHeader& h, const std::string& path,
                        int channels) {
  if (h.maxval == 0 || h.maxval > 65535)
    throw CorruptImage(path, str("a pnm with maxval ", h.maxval, " (it must be 1 to 65535)"));
  if (h.width == 0 || h.height == 0)
    throw CorruptImage(path, str("empty image ", h.width, "x", h.height));
  if (h.width > uint64_t(kMaxImagePixels) / h.height)  // before the products below can overflow
    throw CorruptImage(path, str(h.width, " x ", h.height, " pixels is more than the ",
                                 kMaxImagePixels, " allowed"));
  const bool wide = h.maxval > 255;
  const size_t count = size_t(h.width * h.height * h.channels);
  const double top = wide && h.channels == 1 ? 65535 : 255;
  const uint8_t* in = data + h.data_offset;
  auto* px = static_cast<stbi_uc*>(STBI_MALLOC(count));
  HG_CHECK(px != nullptr, "decode_pnm_scaled: out of memory for '", path, "'");
  for (size_t i = 0; i < count; ++i) {
    const double v = wide ? double(read_be16(in + 2 * i)) : double(in[i]);
    const double scaled = std::min(top, std::nearbyint(v / double(h.maxval) * top));
    px[i] = static_cast<stbi_uc>(top == 255 ? scaled : double(int(scaled) >> 8));
  }
  const int n = static_cast<int>(h.channels);
  std::unique_ptr<stbi_uc, void (*)(void*)> out(
      n == channels ? px
                    : stbi__convert_format(px, n, channels, unsigned(h.width), unsigned(h.height)),
      stbi_image_free);
  HG_CHECK(out != nullptr, "decode_pnm_scaled: cannot convert '", path, "' to ", channels,
           " channels");
  Image img;
  img.height = int64_t(h.height);
  img.width = int64_t(h.width);
  img.channels = channels;
  img.pixels.assign(out.get(), out.get() + count / h.channels * size_t(channels));
  return img;
}
}  // namespace

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) throw CorruptImage(path, str("cannot open the file: ", std::strerror(errno)));
  // Straight into a vector sized from fstat (one read, no stdio buffer copy, no regrowth); one byte
  // more, so that the read that fills it also finds the end; grown if the file is longer than it
  // said.
  std::setvbuf(f.get(), nullptr, _IONBF, 0);
  struct stat st {};
  const bool stated = fstat(fileno(f.get()), &st) == 0;
  // /dev/zero took every byte of memory, then "out of host memory" with no file named
  if (io::is_device(fileno(f.get()))) throw CorruptImage(path, "it is a device, not an image file");
  // no decoder here reads more (stb takes at most 2^31 - 1 bytes); a pipe is read up to it
  constexpr size_t kMaxImageFileBytes = size_t{1} << 30;
  const auto too_large = [&] {
    return CorruptImage(path, str("it is larger than ", kMaxImageFileBytes >> 20,
                                  " MiB, more than any image file haargrad reads"));
  };
  const bool sized = stated && st.st_size > 0;
  if (sized && static_cast<uint64_t>(st.st_size) > kMaxImageFileBytes) throw too_large();
  std::vector<uint8_t> bytes(sized ? static_cast<size_t>(st.st_size) + 1 : size_t(1) << 16);
  size_t n = 0, got;
  while ((got = std::fread(bytes.data() + n, 1, bytes.size() - n, f.get())) > 0) {
    n += got;
    if (n > kMaxImageFileBytes) throw too_large();
    if (n == bytes.size()) bytes.resize(2 * n);
  }
  // a folder opens as a file and fails here (bench-augment --image DIR said only "read error")
  if (std::ferror(f.get()))
    throw CorruptImage(path, errno == EISDIR ? std::string("it is a folder, not an image file")
                                             : str("read error: ", std::strerror(errno)));
  bytes.resize(n);
  return bytes;
}

Image decode_with_stb(const uint8_t* data, size_t size, const std::string& path, int channels) {
  HG_CHECK(channels == 1 || channels == 3, "decode_with_stb: channels must be 1 or 3, got ", channels);
  HG_CHECK(size <= static_cast<size_t>(INT32_MAX), "decode_with_stb: '", path, "' is too large for stb_image");
  if (const auto why = raster_cut_short(sniff_image_format(data, size), data, size, size))
    throw CorruptImage(path, *why);
  if (sniff_image_format(data, size) == ImageFormat::png)
    if (const auto why = png_damaged_chunk(data, size)) throw CorruptImage(path, *why);
  int w = 0, h = 0, file_channels = 0;
  // the size first: a small PNG can hold a huge image (2.4 MB for 50000 x 50000 zeros)
  // (a top-down BMP's height reads negative here)
  if (stbi_info_from_memory(data, static_cast<int>(size), &w, &h, &file_channels) &&
      int64_t(w) * std::abs(int64_t(h)) > kMaxImagePixels)
    throw CorruptImage(path,
                       str(w, " x ", h, " pixels is more than the ", kMaxImagePixels, " allowed"));
  // a PNG's size from its IHDR where stb_image's info refuses it (over its 2^30 bytes): said
  // with the size, not as stb's bare "Image too large to decode"
  if (sniff_image_format(data, size) == ImageFormat::png && size >= 24) {
    const uint64_t pw = read_be32(data + 16), ph = read_be32(data + 20);
    if (pw * ph > uint64_t(kMaxImagePixels))
      throw CorruptImage(path, str("a ", pw, " x ", ph, " png: ", pw * ph,
                                   " pixels is more than the ", kMaxImagePixels, " allowed"));
  }
  if (const std::optional<PnmHeader> pnm = sniff_image_format(data, size) == ImageFormat::pnm
                                               ? pnm_header(data, size)
                                               : std::nullopt;
      pnm && pnm->maxval != 255)
    return decode_pnm_scaled(data, *pnm, path, channels);
  // stb converts to the requested channel count itself, but a colour image (RGB, RGBA, palette)
  // for one channel is PIL's convert("L") here: ITU-R 601-2 luma rounded, where stb's truncates
  // (most pixels one level darker). Its failure reason is thread-local.
  const bool luma = channels == 1 && file_channels >= 3;
  std::unique_ptr<stbi_uc, void (*)(void*)> px(
      stbi_load_from_memory(data, static_cast<int>(size), &w, &h, &file_channels,
                            luma ? 3 : channels),
      stbi_image_free);
  if (!px) throw CorruptImage(path, stbi_failure_reason() ? stbi_failure_reason() : "unknown error");
  if (w <= 0 || h <= 0) throw CorruptImage(path, str("empty image ", w, "x", h));
  Image img;
  img.height = h;
  img.width = w;
  img.channels = channels;
  const size_t n = static_cast<size_t>(w) * h;
  if (luma) {
    img.pixels.resize(n);
    for (size_t i = 0; i < n; ++i) {  // Pillow's L24: weights 19595, 38470, 7471 of 2^16
      const stbi_uc* p = px.get() + 3 * i;
      img.pixels[i] =
          static_cast<uint8_t>((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
    }
  } else {
    img.pixels.assign(px.get(), px.get() + n * channels);
  }
  return img;
}

Image read_image(const std::string& path, int channels, JpegDecoder jpeg) {
  HG_CHECK(channels == 1 || channels == 3, "read_image: channels must be 1 or 3, got ", channels);
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  const ImageFormat format = sniff_image_format(bytes.data(), bytes.size());
  if (format == ImageFormat::unknown) throw not_an_image(path, bytes);
  if (format == ImageFormat::jpeg && jpeg != JpegDecoder::stb)
    return decode_jpeg(bytes.data(), bytes.size(), path, channels, 1).image;
  return decode_with_stb(bytes.data(), bytes.size(), path, channels);
}

namespace {

/// Why bytes that start as `bytes` do are no image of ours: "empty file" or their first bytes.
std::string not_an_image_reason(const std::vector<uint8_t>& bytes) {
  if (bytes.empty()) return "empty file";
  // a plain-text PGM / PPM (P2 / P3) is one, of a kind stb_image does not read (PIL does)
  if (bytes.size() >= 3 && bytes[0] == 'P' && (bytes[1] == '2' || bytes[1] == '3') &&
      std::isspace(bytes[2]))
    return bytes[1] == '2' ? "a plain-text (ASCII) PGM (P2), which haargrad does not decode: "
                             "convert it to a binary PGM (P5) or PNG"
                           : "a plain-text (ASCII) PPM (P3), which haargrad does not decode: "
                             "convert it to a binary PPM (P6) or PNG";
  // formats one meets among downloaded images: named, not only shown as bytes
  const auto starts = [&](size_t at, std::string_view magic) {  // views: TIFF's hold a 0 byte
    return bytes.size() >= at + magic.size() &&
           std::memcmp(bytes.data() + at, magic.data(), magic.size()) == 0;
  };
  const std::string_view tiff_le("II*\0", 4), tiff_be("MM\0*", 4);
  const char* kind = starts(0, "GIF8")                                ? "a GIF"
                     : starts(0, "RIFF") && starts(8, "WEBP")         ? "a WebP"
                     : starts(0, tiff_le) || starts(0, tiff_be)       ? "a TIFF"
                     : starts(4, "ftypheic") || starts(4, "ftypmif1") ? "a HEIC"
                     : starts(4, "ftypavif")                          ? "an AVIF"
                                                                      : nullptr;
  if (kind != nullptr)
    return str(kind,
               " file, which haargrad does not decode (it reads JPEG, PNG, BMP, PPM and PGM): "
               "convert it, e.g. to PNG");
  std::string head;
  char hex[4];
  for (size_t i = 0; i < std::min<size_t>(8, bytes.size()); ++i) {
    std::snprintf(hex, sizeof hex, "%02x ", bytes[i]);
    head += hex;
  }
  return str("not a JPEG, PNG, BMP, PPM or PGM file (it starts with bytes ",
             head.substr(0, head.size() - 1), "), whatever its name says");
}

}  // namespace

CorruptImage not_an_image(const std::string& path, const std::vector<uint8_t>& bytes) {
  return CorruptImage(path, not_an_image_reason(bytes));
}

namespace {
// A JPEG's (height, width) from its frame header (SOFn), found by stepping over the segments
// before it (APPn with EXIF data can be tens of kilobytes): a small read per segment, of its
// header behind a few fill bytes and a frame header's first fields (more fill bytes than the read
// holds, which no writer makes, end the walk). Nothing when the walk meets something other than a
// well-formed segment before it; the decoder judges those.
std::optional<std::pair<int64_t, int64_t>> jpeg_frame_size(std::FILE* f) {
  long at = 2;  // after the start-of-image marker
  for (int segment = 0; segment < 256; ++segment) {
    uint8_t head[64];
    if (std::fseek(f, at, SEEK_SET) != 0) return std::nullopt;
    const size_t n = std::fread(head, 1, sizeof head, f);
    const std::optional<JpegSegment> s = jpeg_segment_at(head, n, 0);
    if (!s || s->marker == 0xDA || s->marker == 0xD9) return std::nullopt;  // scan, end of image
    const uint8_t m = s->marker;
    if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {  // a frame header
      if (s->end - s->payload < 5 || s->payload + 5 > n) return std::nullopt;
      const uint8_t* h = head + s->payload;  // precision, height, width
      return std::pair<int64_t, int64_t>(read_be16(h + 1), read_be16(h + 3));
    }
    at += long(s->end);
  }
  return std::nullopt;
}
}  // namespace

bool probe_image(const std::string& path, std::string* reason) {
  auto fail = [&](const std::string& why) {
    if (reason) *reason = why;
    return false;
  };
  // The first bytes decide the format, as read_image's do: an empty or a text file is named as
  // such (stbi_info tries every format and keeps the last one's complaint, "unknown image type").
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) return fail(str("cannot open the file: ", std::strerror(errno)));
  std::vector<uint8_t> head(512);  // any header but a PNM's with long comments
  head.resize(std::fread(head.data(), 1, head.size(), f.get()));
  const ImageFormat format = sniff_image_format(head.data(), head.size());
  if (format == ImageFormat::unknown) return fail(not_an_image_reason(head));
  // A file cut short (a download or copy that stopped) is caught here, rather than when training
  // first reads it: a JPEG or PNG by its last bytes, which hold no end marker (or, when bytes
  // follow a whole image, by walking its structure to the marker: data_reaches_end), a PGM / PPM /
  // BMP by the size its header gives (stb_image would decode it without an error)
  const auto data_reaches_end = [&](bool (*reaches)(const uint8_t*, size_t)) {
    f.reset();
    try {
      const std::vector<uint8_t> all = read_file_bytes(path);
      return reaches(all.data(), all.size());
    } catch (const CorruptImage&) {
      return false;  // gone or unreadable since it was opened
    }
  };
  std::vector<uint8_t> tail(64);
  if (format == ImageFormat::jpeg || format == ImageFormat::png) {
    if (std::fseek(f.get(), -static_cast<long>(tail.size()), SEEK_END) != 0)
      std::fseek(f.get(), 0, SEEK_SET);  // a file shorter than the tail: all of it
    tail.resize(std::fread(tail.data(), 1, tail.size(), f.get()));
  }
  // JPEGs are decoded by libjpeg-turbo, which takes kinds stb_image does not (arithmetic coding):
  // here only a cut-off file (its last bytes hold no end-of-image marker) and a size over the
  // pixel cap are caught; the decoder reports the rest when it reads the image
  if (format == ImageFormat::jpeg) {
    const std::optional<std::pair<int64_t, int64_t>> size = jpeg_frame_size(f.get());
    if (!jpeg_has_end_marker(tail.data(), tail.size()) && !data_reaches_end(jpeg_reaches_end))
      return fail("a jpeg cut short (its data ends before the end-of-image marker)");
    if (size && size->first * size->second > kMaxImagePixels)
      return fail(str("a ", size->second, "x", size->first, " jpeg: more than the ",
                      kMaxImagePixels, " pixels allowed"));
    return true;
  }
  f.reset();  // stb_image opens it by name
  int w = 0, h = 0, c = 0;
  const bool info = stbi_info(path.c_str(), &w, &h, &c);
  // stb gives a top-down BMP's height (rows stored first to last) negative, as its header has it
  if (format == ImageFormat::bmp && h < 0 && h > INT32_MIN) h = -h;
  if (info && w > 0 && h > 0) {
    if (int64_t(w) * h > kMaxImagePixels)
      return fail(str("a ", w, "x", h, " ", format_name(format), ": more than the ",
                      kMaxImagePixels, " pixels allowed"));
    // a PNG ends with its IEND chunk, type and CRC (a few bytes after it, as some writers leave,
    // are allowed)
    static const uint8_t kIend[] = {'I', 'E', 'N', 'D'};
    if (format == ImageFormat::png &&
        tail.end() - std::search(tail.begin(), tail.end(), std::begin(kIend), std::end(kIend)) <
            8 &&
        !data_reaches_end(png_reaches_end))
      return fail("a png cut short (its chunks end before the IEND chunk)");
    struct stat st {};
    if (const auto why =
            stat(path.c_str(), &st) == 0
                ? raster_cut_short(format, head.data(), head.size(), uint64_t(st.st_size))
                : std::nullopt)
      return fail(*why);
    return true;
  }
  // a PNG header stb refuses: its size, when that is why (stb decodes at most 2^30 bytes)
  if (format == ImageFormat::png && head.size() >= 26) {  // up to the IHDR colour type
    const uint64_t pw = read_be32(head.data() + 16), ph = read_be32(head.data() + 20);
    const int type = head[25];  // IHDR colour type: the channels stb decodes it to
    const uint64_t channels = type == 2 ? 3 : type == 4 ? 2 : type == 6 ? 4 : 1;
    if (pw * ph * channels > (uint64_t(1) << 30))
      return fail(
          str("a ", pw, "x", ph, " PNG: too large to decode (stb_image takes at most 2^30 bytes)"));
  }
  if (format == ImageFormat::bmp && bmp_is_rle(head.data(), head.size()))
    return fail(
        "an RLE-compressed bmp (BI_RLE8 / BI_RLE4), which haargrad does not decode (PIL does): "
        "convert it, e.g. to PNG");
  return fail(str("a ", format_name(format), " header stb_image cannot read (", format_name(format),
                  " of an unsupported kind, or cut short)"));
}

namespace {
void check_writable(const char* fn, const std::string& path, const Image& img) {
  HG_CHECK(img.height > 0 && img.width > 0 && img.channels >= 1 && img.channels <= 4 &&
               img.pixels.size() == static_cast<size_t>(img.height * img.width * img.channels),
           fn, ": bad image for '", path, "': ", img.height, "x", img.width, "x", img.channels, " with ",
           img.pixels.size(), " bytes");
}
}  // namespace

namespace {
// stb's writers hand the encoded bytes to this callback; the file itself goes through the checked,
// atomic writer (a full disk is an error naming the file, never a truncated image).
void append_bytes(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
}
}  // namespace

void write_png(const std::string& path, const Image& img) {
  check_writable("write_png", path, img);
  std::string bytes;
  int ok = stbi_write_png_to_func(append_bytes, &bytes, int(img.width), int(img.height), int(img.channels),
                                  img.pixels.data(), int(img.width * img.channels));
  HG_CHECK(ok, "write_png: cannot encode '", path, "'");
  io::write_file_atomic(path, bytes);
}

void write_jpeg(const std::string& path, const Image& img, int quality) {
  check_writable("write_jpeg", path, img);
  std::string bytes;
  int ok = stbi_write_jpg_to_func(append_bytes, &bytes, int(img.width), int(img.height), int(img.channels),
                                  img.pixels.data(), quality);
  HG_CHECK(ok, "write_jpeg: cannot encode '", path, "'");
  io::write_file_atomic(path, bytes);
}

void write_bmp(const std::string& path, const Image& img) {
  check_writable("write_bmp", path, img);
  std::string bytes;
  int ok = stbi_write_bmp_to_func(append_bytes, &bytes, int(img.width), int(img.height), int(img.channels),
                                  img.pixels.data());
  HG_CHECK(ok, "write_bmp: cannot encode '", path, "'");
  io::write_file_atomic(path, bytes);
}

}  // namespace hg::data
