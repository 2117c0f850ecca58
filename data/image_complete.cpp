#include "data/image_complete.h"

#include <cctype>
#include <cstdlib>
#include <cstring>

#include <zlib.h>

#include "core/big_endian.h"
#include "core/error.h"
#include "data/jpeg_decode.h"

namespace hg::data {

namespace {

uint32_t le16(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
uint32_t le32(const uint8_t* p) { return le16(p) | le16(p + 2) << 16; }

// A netpbm header's next decimal field after whitespace and '#' comments (to the end of their
// line); nothing when the header ends or holds something else first.
std::optional<uint64_t> pnm_field(const uint8_t* d, size_t n, size_t& i) {
  for (;;) {
    while (i < n && std::isspace(d[i])) ++i;
    if (i < n && d[i] == '#') {
      while (i < n && d[i] != '\n' && d[i] != '\r') ++i;
      continue;
    }
    break;
  }
  if (i >= n || !std::isdigit(d[i])) return std::nullopt;
  uint64_t v = 0;
  for (; i < n && std::isdigit(d[i]); ++i) {
    v = v * 10 + uint64_t(d[i] - '0');
    if (v > (uint64_t(1) << 32)) return std::nullopt;  // no image of ours; stb names it
  }
  return v;
}

std::optional<uint64_t> pnm_file_size(const uint8_t* d, size_t n) {
  const std::optional<PnmHeader> h = pnm_header(d, n);
  if (!h) return std::nullopt;
  return h->data_offset + h->width * h->height * h->channels * (h->maxval > 255 ? 2 : 1);
}

std::optional<uint64_t> bmp_file_size(const uint8_t* d, size_t n) {
  if (n < 30) return std::nullopt;
  const uint64_t offset = le32(d + 10), dib = le32(d + 14);
  uint64_t width, height, bits, compression = 0;
  if (dib == 12) {  // BITMAPCOREHEADER: 16-bit sizes
    width = le16(d + 18);
    height = le16(d + 20);
    bits = le16(d + 24);
  } else if (dib >= 40 && n >= 34) {
    width = uint64_t(std::abs(int64_t(int32_t(le32(d + 18)))));
    height = uint64_t(std::abs(int64_t(int32_t(le32(d + 22)))));  // negative: top-down rows
    bits = le16(d + 28);
    compression = le32(d + 30);
  } else {
    return std::nullopt;
  }
  // BI_RGB and BI_BITFIELDS store rows as they are; RLE (1, 2) and embedded JPEG / PNG do not
  if ((compression != 0 && compression != 3) || width == 0 || height == 0 || bits == 0 || bits > 32)
    return std::nullopt;
  const uint64_t row = (width * bits + 7) / 8, stride = (width * bits + 31) / 32 * 4;
  return offset + stride * (height - 1) + row;
}

}  // namespace

bool bmp_is_rle(const uint8_t* head, size_t n) {
  // a BITMAPINFOHEADER or later (40 bytes or more) holds the compression at byte 30
  if (n < 34 || head[0] != 'B' || head[1] != 'M' || le32(head + 14) < 40) return false;
  const uint32_t compression = le32(head + 30);
  return compression == 1 || compression == 2;
}

std::optional<PnmHeader> pnm_header(const uint8_t* d, size_t n) {
  if (n < 2) return std::nullopt;
  size_t i = 2;  // after P5 / P6
  const auto w = pnm_field(d, n, i), h = pnm_field(d, n, i), maxval = pnm_field(d, n, i);
  if (!w || !h || !maxval || i >= n || !std::isspace(d[i])) return std::nullopt;
  // one whitespace character ends the header
  return PnmHeader{*w, *h, *maxval, uint64_t(d[1] == '6' ? 3 : 1), uint64_t(i + 1)};
}

std::optional<uint64_t> raster_file_size(ImageFormat format, const uint8_t* head, size_t n) {
  if (format == ImageFormat::pnm) return pnm_file_size(head, n);
  if (format == ImageFormat::bmp) return bmp_file_size(head, n);
  return std::nullopt;
}

bool jpeg_reaches_end(const uint8_t* data, size_t size) {
  if (!is_jpeg(data, size)) return false;
  size_t i = 2;  // after the start-of-image marker
  while (i < size) {
    // bytes before a marker that are none (libjpeg skips them with a warning, as PIL reads them)
    const void* at = std::memchr(data + i, 0xFF, size - i);
    if (at == nullptr) return false;
    const std::optional<JpegSegment> segment =
        jpeg_segment_at(data, size, size_t(static_cast<const uint8_t*>(at) - data));
    if (!segment) return false;
    if (segment->marker == 0xD9) return true;
    i = segment->end;
    if (segment->marker != 0xDA) continue;
    // a scan's entropy-coded data: an FF there is a stuffed byte (FF 00) or a restart marker
    // (FF D0 .. D7); any other FF starts the next marker
    for (;;) {
      if (i >= size) return false;
      const void* ff = std::memchr(data + i, 0xFF, size - i);
      if (ff == nullptr) return false;
      i = size_t(static_cast<const uint8_t*>(ff) - data);
      if (i + 1 >= size) return false;
      const uint8_t next = data[i + 1];
      if (next == 0xFF) {  // a fill byte: a marker follows (a restart marker stays in the scan)
        ++i;
        continue;
      }
      if (next != 0x00 && !(next >= 0xD0 && next <= 0xD7)) break;
      i += 2;
    }
  }
  return false;
}

bool png_reaches_end(const uint8_t* data, size_t size) {
  size_t i = 8;  // after the signature
  while (i + 8 <= size) {
    const uint64_t length = read_be32(data + i);
    const bool iend = std::memcmp(data + i + 4, "IEND", 4) == 0;
    const uint64_t next = uint64_t(i) + 12 + length;  // length, type, data, CRC
    if (iend) return next <= size;
    i = size_t(next);
  }
  return false;
}

std::optional<std::string> png_damaged_chunk(const uint8_t* data, size_t size) {
  size_t i = 8;  // after the signature
  while (i + 12 <= size) {
    const uint64_t length = read_be32(data + i);
    if (uint64_t(i) + 12 + length > size) return std::nullopt;  // cut short: not this check's
    const uint8_t* type = data + i + 4;
    const bool critical = type[0] >= 'A' && type[0] <= 'Z';
    // the CRC covers the type and the data (PNG spec, 5.3); zlib's crc32 is that CRC
    const uLong crc = crc32(crc32(0L, Z_NULL, 0), type, static_cast<uInt>(4 + length));
    if (critical && crc != read_be32(data + i + 8 + length))
      return str("a png whose ", std::string(reinterpret_cast<const char*>(type), 4),
                 " chunk at byte ", i, " fails its CRC check: the file is damaged");
    if (std::memcmp(type, "IEND", 4) == 0) return std::nullopt;
    i += 12 + length;
  }
  return std::nullopt;
}

}  // namespace hg::data
