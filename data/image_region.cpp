// Decoding the region a crop needs (see image_region.h).
#include "data/image_region.h"

#include <algorithm>
#include <cmath>

#include "data/jpeg_decode.h"
#include "data/transforms.h"

namespace hg::data {

std::string DecodeInfo::key() const {
  if (format == ImageFormat::unknown) return "memory";
  if (!turbo) return str(format_name(format), " stb");
  return str(format_name(format), " turbo 1/", scale);
}

int jpeg_scale_for(const CropRequest& req) {
  for (int s : {8, 4, 2})
    if (req.box.w / s >= static_cast<double>(req.out_w) && req.box.h / s >= static_cast<double>(req.out_h)) return s;
  return 1;
}

PixelRect crop_reach_rect(const CropBox& box, int64_t out_h, int64_t out_w, int64_t height, int64_t width) {
  // The filter's reach, plus 2 pixels: at a column-crop edge libjpeg's fancy upsampling lacks its
  // neighbour, so the outermost decoded pixels may differ from a whole-image decode.
  const int64_t mx = resample_reach(box.w, out_w) + 2, my = resample_reach(box.h, out_h) + 2;
  PixelRect r{static_cast<int64_t>(std::floor(box.x)) - mx, static_cast<int64_t>(std::floor(box.y)) - my,
              static_cast<int64_t>(std::ceil(box.x + box.w)) + mx, static_cast<int64_t>(std::ceil(box.y + box.h)) + my};
  r.x0 = std::clamp<int64_t>(r.x0, 0, width);
  r.x1 = std::clamp<int64_t>(r.x1, 0, width);
  r.y0 = std::clamp<int64_t>(r.y0, 0, height);
  r.y1 = std::clamp<int64_t>(r.y1, 0, height);
  return r;
}

ImageRegion read_image_region(const std::string& path, int channels, const CropChooser& choose, JpegDecoder jpeg) {
  return decode_image_region(read_file_bytes(path), path, channels, choose, jpeg);
}

ImageRegion decode_image_region(const std::vector<uint8_t>& bytes, const std::string& path,
                                int channels, const CropChooser& choose, JpegDecoder jpeg) {
  HG_CHECK(channels == 1 || channels == 3, "read_image_region: channels must be 1 or 3, got ",
           channels);
  ImageRegion out;
  out.info.format = sniff_image_format(bytes.data(), bytes.size());
  out.info.file_bytes = static_cast<int64_t>(bytes.size());
  if (out.info.format == ImageFormat::unknown) throw not_an_image(path, bytes);

  if (out.info.format != ImageFormat::jpeg || jpeg == JpegDecoder::stb) {
    out.image = decode_with_stb(bytes.data(), bytes.size(), path, channels);
    out.box = choose(out.image.height, out.image.width).box;
    return out;
  }
  const JpegHeader h = read_jpeg_header(bytes.data(), bytes.size(), path);
  const CropRequest req = choose(h.height, h.width);
  out.info.turbo = true;
  if (jpeg == JpegDecoder::turbo_full) {
    out.image = decode_jpeg(bytes.data(), bytes.size(), path, channels, 1).image;
    out.box = req.box;
    return out;
  }
  const int s = jpeg_scale_for(req);
  const CropBox b{req.box.x / s, req.box.y / s, req.box.w / s, req.box.h / s};  // in the 1/s image
  const PixelRect want = crop_reach_rect(b, req.out_h, req.out_w, jpeg_scaled_size(h.height, s),
                                         jpeg_scaled_size(h.width, s));
  JpegRegion r = decode_jpeg(bytes.data(), bytes.size(), path, channels, s, want);
  out.image = std::move(r.image);
  out.box = CropBox{b.x - static_cast<double>(r.x0), b.y - static_cast<double>(r.y0), b.w, b.h};
  out.info.scale = s;
  return out;
}

}  // namespace hg::data
