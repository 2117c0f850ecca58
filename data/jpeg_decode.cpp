// libjpeg-turbo decoding (see jpeg_decode.h). libjpeg reports fatal errors through a callback that
// must not return, so run_libjpeg() longjmps out of it: that function holds only plain data (a longjmp
// skips C++ destructors) and everything with a destructor lives in its caller.
#include "data/jpeg_decode.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include <spdlog/spdlog.h>

#include "core/big_endian.h"
#include "core/utf8.h"

// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

namespace hg::data {

namespace {

// Larger images are refused rather than allocated (a 16-byte file can claim 65535 x 65535 pixels).
constexpr int64_t kMaxPixels = kMaxImagePixels;

struct ErrorState {
  jpeg_error_mgr mgr;  // first member: libjpeg hands back this pointer as cinfo->err
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool hit_eof;        // libjpeg ran out of data and invented an end-of-image marker
  int warnings;        // other corrupt-data warnings; the first one's text below
  char first_warning[JMSG_LENGTH_MAX];
};

void on_error(j_common_ptr c) {
  auto* st = reinterpret_cast<ErrorState*>(c->err);
  c->err->format_message(c, st->message);
  std::longjmp(st->jump, 1);
}

// Warnings (level -1) are not printed here: libjpeg's own handler writes them to stderr without the
// file's name, from whichever loader thread decodes it. Running out of data becomes a "truncated"
// error (run()); other corrupt-data warnings are tolerated as PIL does, and the first one's text is
// kept for run() to log with the file's name (a corrupt scan can warn once per MCU row).
void on_message(j_common_ptr c, int level) {
  if (level >= 0) return;
  auto* st = reinterpret_cast<ErrorState*>(c->err);
  if (c->err->msg_code == JWRN_JPEG_EOF) st->hit_eof = true;
  else if (st->warnings++ == 0)
    c->err->format_message(c, st->first_warning);
  c->err->num_warnings++;
}

// Logs a file libjpeg-turbo decoded despite corrupt data, once per file for the whole process: the
// header read and the decode of one image, and every epoch after, would otherwise repeat it. Loader
// workers decode side by side, hence the lock (spdlog's loggers are thread-safe themselves).
void warn_corrupt_jpeg_once(const std::string& path, const ErrorState& st) {
  static std::mutex mu;
  static std::unordered_set<std::string> warned;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!warned.insert(path).second) return;
  }
  spdlog::warn(
      "JPEG '{}': corrupt data, decoded anyway as PIL does (libjpeg-turbo: {}{}); not "
      "repeated for this file",
      printable(path), st.first_warning,
      st.warnings > 1 ? str(", and ", st.warnings - 1, " more warnings") : std::string());
}

// Everything run_libjpeg reads and writes: plain data only.
struct Job {
  const uint8_t* data;
  size_t size;
  bool header_only;
  int channels;
  int scale;
  PixelRect want;
  bool ends_with_eoi;
  std::vector<uint8_t>* pixels;   // owned by the caller; filled with rows * width * components bytes
  std::vector<uint8_t>* scratch;  // owned by the caller; one row read past the region
  // results
  JpegHeader header;
  int64_t x0, y0, width, rows;
  int components;
};

bool run_libjpeg(Job* job, ErrorState* st, jpeg_decompress_struct* cinfo) {
  if (setjmp(st->jump)) return false;
  jpeg_create_decompress(cinfo);
  jpeg_mem_src(cinfo, job->data, static_cast<unsigned long>(job->size));
  jpeg_read_header(cinfo, TRUE);
  job->header.width = cinfo->image_width;
  job->header.height = cinfo->image_height;
  job->header.components = cinfo->num_components;
  job->header.progressive = cinfo->progressive_mode;
  job->header.adobe = cinfo->saw_Adobe_marker;
  if (job->header_only) return true;
  if (job->header.width * job->header.height > kMaxPixels) {
    std::snprintf(st->message, sizeof st->message, "%lld x %lld pixels is more than the %lld allowed",
                  static_cast<long long>(job->header.width), static_cast<long long>(job->header.height),
                  static_cast<long long>(kMaxPixels));
    return false;
  }

  // libjpeg-turbo converts gray/YCbCr/RGB to RGB or gray itself, but 4-component data only to CMYK.
  if (cinfo->num_components == 4) cinfo->out_color_space = JCS_CMYK;
  else cinfo->out_color_space = job->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  cinfo->scale_num = 1;
  cinfo->scale_denom = static_cast<unsigned>(job->scale);
  cinfo->dct_method = JDCT_ISLOW;  // libjpeg's and PIL's default: the accurate integer IDCT
  jpeg_start_decompress(cinfo);
  const int64_t W = cinfo->output_width, H = cinfo->output_height;

  PixelRect r = job->want;
  if (r.empty()) r = PixelRect{0, 0, W, H};
  r.x0 = std::max<int64_t>(r.x0, 0);
  r.y0 = std::max<int64_t>(r.y0, 0);
  r.x1 = std::min(r.x1, W);
  r.y1 = std::min(r.y1, H);
  if (r.empty()) r = PixelRect{0, 0, W, H};
  JDIMENSION xoff = static_cast<JDIMENSION>(r.x0), cw = static_cast<JDIMENSION>(r.x1 - r.x0);
  if (cw < W) jpeg_crop_scanline(cinfo, &xoff, &cw);  // widens to the block grid
  if (r.y0 > 0) jpeg_skip_scanlines(cinfo, static_cast<JDIMENSION>(r.y0));

  job->x0 = xoff;
  job->y0 = r.y0;
  job->width = cw;
  job->rows = r.y1 - r.y0;
  job->components = cinfo->output_components;
  const size_t stride = static_cast<size_t>(cw) * static_cast<size_t>(cinfo->output_components);
  job->pixels->resize(stride * static_cast<size_t>(job->rows));
  JSAMPROW rows[16];
  while (static_cast<int64_t>(cinfo->output_scanline) < r.y1) {
    const int64_t done = static_cast<int64_t>(cinfo->output_scanline) - r.y0;
    const int64_t n = std::min<int64_t>(16, r.y1 - static_cast<int64_t>(cinfo->output_scanline));
    for (int64_t i = 0; i < n; ++i) rows[i] = job->pixels->data() + static_cast<size_t>(done + i) * stride;
    jpeg_read_scanlines(cinfo, rows, static_cast<JDIMENSION>(n));
  }
  if (r.y1 < H && job->ends_with_eoi) {
    jpeg_abort_decompress(cinfo);  // the file is complete: the rows below are not needed
    return true;
  }
  // Read to the end, so that a truncated file is found whatever region was asked for. Skipping to the
  // very end decodes nothing (libjpeg-turbo marks the input done), so the last row is read.
  if (r.y1 < H) {
    if (H - r.y1 > 1) jpeg_skip_scanlines(cinfo, static_cast<JDIMENSION>(H - r.y1 - 1));
    job->scratch->resize(stride);
    JSAMPROW last = job->scratch->data();
    jpeg_read_scanlines(cinfo, &last, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

// Runs a job with libjpeg's state created and destroyed here; throws CorruptImage on failure.
void run(Job& job, const std::string& path) {
  ErrorState st{};
  jpeg_decompress_struct cinfo{};
  cinfo.err = jpeg_std_error(&st.mgr);
  st.mgr.error_exit = on_error;
  st.mgr.emit_message = on_message;
  const bool ok = run_libjpeg(&job, &st, &cinfo);
  jpeg_destroy_decompress(&cinfo);
  // Past the end of the data libjpeg reads an invented end-of-image marker, which can make a cut
  // marker segment look bogus: the truncation is the cause to report.
  if (!ok && st.hit_eof)
    throw CorruptImage(path, str("truncated: the data ends early (", job.size, " bytes; libjpeg-turbo: ", st.message, ")"));
  if (!ok) throw CorruptImage(path, str("libjpeg-turbo: ", st.message));
  if (st.hit_eof && !job.header_only)
    throw CorruptImage(path, str("truncated: the data ends before the end-of-image marker (", job.size, " bytes)"));
  if (st.warnings > 0) warn_corrupt_jpeg_once(path, st);
}

// A CMYK JPEG's samples are read as Photoshop writes them, 255 - ink, with or without its Adobe
// marker: PIL reads every CMYK JPEG so ("CMYK;I", Adobe's convention), and a file without the
// marker read as plain ink came out nearly black where PIL shows the picture.
void cmyk_to_rgb(const uint8_t* src, int64_t n, uint8_t* rgb) {
  for (int64_t p = 0; p < n; ++p, src += 4, rgb += 3) {
    const int k = src[3];  // 255 - K
    for (int c = 0; c < 3; ++c) rgb[c] = static_cast<uint8_t>((src[c] * k + 127) / 255);
  }
}

}  // namespace

bool jpeg_has_end_marker(const uint8_t* data, size_t size) {
  if (size < 4) return false;
  const size_t from = size > 64 ? size - 64 : 2;  // after the start-of-image marker
  for (size_t i = size - 1; i > from; --i)
    if (data[i] == 0xD9 && data[i - 1] == 0xFF) return true;
  return false;
}

bool is_jpeg(const uint8_t* data, size_t size) {
  return size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
}

std::optional<JpegSegment> jpeg_segment_at(const uint8_t* data, size_t size, size_t at) {
  if (at >= size || data[at] != 0xFF) return std::nullopt;
  size_t i = at + 1;
  while (i < size && data[i] == 0xFF) ++i;  // fill bytes
  if (i >= size) return std::nullopt;
  JpegSegment s;
  s.marker = data[i++];
  if (s.marker == 0x01 || (s.marker >= 0xD0 && s.marker <= 0xD9)) {  // TEM, RSTn, SOI, EOI
    s.payload = s.end = i;
    return s;
  }
  if (i + 2 > size) return std::nullopt;
  const size_t length = read_be16(data + i);
  if (length < 2) return std::nullopt;
  s.payload = i + 2;
  s.end = i + length;
  return s;
}

int64_t jpeg_scaled_size(int64_t full, int scale) { return (full + scale - 1) / scale; }

JpegHeader read_jpeg_header(const uint8_t* data, size_t size, const std::string& path) {
  if (!is_jpeg(data, size)) throw CorruptImage(path, "not a JPEG file (no start-of-image marker)");
  Job job{};
  job.data = data;
  job.size = size;
  job.header_only = true;
  run(job, path);
  return job.header;
}

JpegRegion decode_jpeg(const uint8_t* data, size_t size, const std::string& path, int channels, int scale,
                       PixelRect want) {
  HG_CHECK(channels == 1 || channels == 3, "decode_jpeg: channels must be 1 or 3, got ", channels);
  HG_CHECK(scale == 1 || scale == 2 || scale == 4 || scale == 8, "decode_jpeg: scale must be 1, 2, 4 or 8, got ",
           scale);
  if (!is_jpeg(data, size)) throw CorruptImage(path, "not a JPEG file (no start-of-image marker)");
  std::vector<uint8_t> raw, scratch;
  Job job{};
  job.data = data;
  job.size = size;
  job.channels = channels;
  job.scale = scale;
  job.want = want;
  job.ends_with_eoi = jpeg_has_end_marker(data, size);
  job.pixels = &raw;
  job.scratch = &scratch;
  run(job, path);

  JpegRegion out;
  out.x0 = job.x0;
  out.y0 = job.y0;
  Image& img = out.image;
  img.height = job.rows;
  img.width = job.width;
  img.channels = channels;
  const int64_t n = job.rows * job.width;
  if (job.components == channels) {
    img.pixels = std::move(raw);
  } else if (job.components == 4) {
    std::vector<uint8_t> rgb(static_cast<size_t>(n * 3));
    cmyk_to_rgb(raw.data(), n, rgb.data());
    if (channels == 3) {
      img.pixels = std::move(rgb);
    } else {
      img.pixels.resize(static_cast<size_t>(n));
      for (int64_t p = 0; p < n; ++p) {
        const uint8_t* q = &rgb[static_cast<size_t>(3 * p)];
        img.pixels[static_cast<size_t>(p)] = static_cast<uint8_t>((299 * q[0] + 587 * q[1] + 114 * q[2] + 500) / 1000);
      }
    }
  } else {
    throw CorruptImage(path, str("libjpeg-turbo gave ", job.components, " components for ", channels, " channels"));
  }
  return out;
}

}  // namespace hg::data
