// Whether an image file holds all of its data: a file cut short (a download or copy that stopped)
// is named as such before a decoder sees it. stb_image reads past the end of a binary PGM / PPM or
// an uncompressed BMP without an error (the missing pixels are zeros, or whatever the buffer held),
// so those are measured against the size their header gives; a JPEG or PNG is complete when its
// structure reaches its end marker, whatever bytes follow (zero padding, a video appended to a
// "motion photo": PIL and libjpeg ignore them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "data/image.h"

namespace hg::data {

/// The bytes a binary PGM / PPM (P5 / P6: header, then width x height x channels samples of 1 byte,
/// or 2 when maxval > 255) or an uncompressed BMP (BI_RGB / BI_BITFIELDS: bfOffBits, then |height|
/// rows padded to 4 bytes; the last row's padding is not required) must hold, from the file's first
/// `n` bytes `head` (512 cover any header but a PNM with long comments). Nothing for other formats,
/// a compressed BMP (RLE), or a header that does not parse: the decoder judges those.
std::optional<uint64_t> raster_file_size(ImageFormat format, const uint8_t* head, size_t n);

/// True when a BMP's header (the file's first `n` bytes `head`) gives RLE compression (BI_RLE8 or
/// BI_RLE4), which PIL decodes and stb_image does not.
bool bmp_is_rle(const uint8_t* head, size_t n);

/// A binary PGM / PPM's header (P5 / P6): its size, maxval, channels (1 or 3) and the offset of its
/// samples (1 byte each, or 2 big-endian ones when maxval > 255), from the file's first `n` bytes
/// `head`; nothing when it does not parse.
struct PnmHeader {
  uint64_t width = 0, height = 0, maxval = 0, channels = 0, data_offset = 0;
};
std::optional<PnmHeader> pnm_header(const uint8_t* head, size_t n);

/// True when `data` (a whole JPEG file) reaches an end-of-image marker (FF D9) by its structure:
/// the segments after the start-of-image marker stepped over by their lengths (an EXIF thumbnail
/// inside APP1 is not mistaken for the end), each scan's entropy-coded data up to the next marker
/// (FF followed by neither the 00 of a stuffed byte nor a restart marker; fill bytes FF before a
/// marker allowed), bytes between segments skipped as libjpeg skips them. False for a file cut
/// short. Reads up to the marker: try jpeg_has_end_marker on the last bytes first.
bool jpeg_reaches_end(const uint8_t* data, size_t size);

/// True when `data` (a whole PNG file) reaches its IEND chunk (and the chunk's CRC) by walking the
/// chunks from the signature by their lengths. False for a file cut short.
bool png_reaches_end(const uint8_t* data, size_t size);

/// Why a PNG (the whole file `data`) is damaged, or nothing: the first critical chunk (IHDR, PLTE,
/// IDAT, IEND: an upper-case first letter) whose CRC-32 does not match its type and data. stb_image
/// checks neither the CRCs nor zlib's Adler-32, so a flipped bit in the pixel data decoded to
/// other pixels unsaid, where PIL fails ("broken data stream"). An ancillary chunk's CRC is not
/// checked (libpng only warns about one); chunks cut short are png_reaches_end's.
std::optional<std::string> png_damaged_chunk(const uint8_t* data, size_t size);

}  // namespace hg::data
