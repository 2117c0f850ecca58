// libjpeg-turbo encoding (see jpeg_encode.h). As in jpeg_decode.cpp, libjpeg's fatal-error callback
// longjmps out of compress(), which therefore holds plain data only.
#include "data/jpeg_encode.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>

#include <jerror.h>
#include <jpeglib.h>

namespace hg::data {

namespace {

struct ErrorState {
  jpeg_error_mgr mgr;  // first member: libjpeg hands back this pointer as cinfo->err
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_error(j_common_ptr c) {
  auto* st = reinterpret_cast<ErrorState*>(c->err);
  c->err->format_message(c, st->message);
  std::longjmp(st->jump, 1);
}

struct Job {
  const uint8_t* pixels;  // rows of width * components bytes
  int64_t width, height;
  int components;         // 1, 3 or 4 (CMYK)
  JpegEncodeOptions opts;
  unsigned char* out;     // malloc'd by libjpeg's memory destination
  unsigned long out_size;
};

bool compress(Job* job, ErrorState* st, jpeg_compress_struct* cinfo) {
  if (setjmp(st->jump)) return false;
  jpeg_create_compress(cinfo);
  jpeg_mem_dest(cinfo, &job->out, &job->out_size);
  cinfo->image_width = static_cast<JDIMENSION>(job->width);
  cinfo->image_height = static_cast<JDIMENSION>(job->height);
  cinfo->input_components = job->components;
  cinfo->in_color_space = job->components == 1 ? JCS_GRAYSCALE : job->components == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(cinfo);
  if (job->components == 4) jpeg_set_colorspace(cinfo, JCS_CMYK);  // writes the Adobe marker
  jpeg_set_quality(cinfo, job->opts.quality, TRUE);
  if (job->components == 3) {
    cinfo->comp_info[0].h_samp_factor = cinfo->comp_info[0].v_samp_factor = job->opts.chroma_subsampling;
  }
  if (job->opts.progressive) jpeg_simple_progression(cinfo);
  jpeg_start_compress(cinfo, TRUE);
  const size_t stride = static_cast<size_t>(job->width * job->components);
  while (cinfo->next_scanline < cinfo->image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(job->pixels + cinfo->next_scanline * stride);
    jpeg_write_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_compress(cinfo);
  return true;
}

// Adobe-inverted CMYK whose naive conversion back, (255 - C)(255 - K) / 255, gives the RGB values.
std::vector<uint8_t> to_inverted_cmyk(const Image& img) {
  const int64_t n = img.height * img.width;
  std::vector<uint8_t> out(static_cast<size_t>(n * 4));
  for (int64_t p = 0; p < n; ++p) {
    const uint8_t* q = &img.pixels[static_cast<size_t>(p * 3)];
    const int mx = std::max({q[0], q[1], q[2]});  // 255 - K
    uint8_t* o = &out[static_cast<size_t>(p * 4)];
    for (int c = 0; c < 3; ++c) o[c] = static_cast<uint8_t>(mx == 0 ? 0 : (255 * q[c] + mx / 2) / mx);  // 255 - C
    o[3] = static_cast<uint8_t>(mx);
  }
  return out;
}

}  // namespace

std::vector<uint8_t> encode_jpeg(const Image& img, const JpegEncodeOptions& opts) {
  HG_CHECK(img.height > 0 && img.width > 0 && (img.channels == 1 || img.channels == 3) &&
               img.pixels.size() == static_cast<size_t>(img.height * img.width * img.channels),
           "encode_jpeg: bad image ", img.height, "x", img.width, "x", img.channels, " with ", img.pixels.size(),
           " bytes (1 or 3 channels)");
  HG_CHECK(opts.quality >= 1 && opts.quality <= 100, "encode_jpeg: quality must be in [1, 100], got ", opts.quality);
  HG_CHECK(opts.chroma_subsampling == 1 || opts.chroma_subsampling == 2,
           "encode_jpeg: chroma_subsampling must be 1 or 2, got ", opts.chroma_subsampling);
  const bool cmyk = opts.cmyk && img.channels == 3;
  std::vector<uint8_t> cmyk_pixels;
  if (cmyk) cmyk_pixels = to_inverted_cmyk(img);
  Job job{};
  job.pixels = cmyk ? cmyk_pixels.data() : img.pixels.data();
  job.width = img.width;
  job.height = img.height;
  job.components = cmyk ? 4 : static_cast<int>(img.channels);
  job.opts = opts;
  ErrorState st{};
  jpeg_compress_struct cinfo{};
  cinfo.err = jpeg_std_error(&st.mgr);
  st.mgr.error_exit = on_error;
  const bool ok = compress(&job, &st, &cinfo);
  jpeg_destroy_compress(&cinfo);
  std::vector<uint8_t> bytes;
  if (ok) bytes.assign(job.out, job.out + job.out_size);
  std::free(job.out);
  HG_CHECK(ok, "encode_jpeg: libjpeg-turbo: ", st.message);
  return bytes;
}

}  // namespace hg::data
