// Decoding the region a crop needs (see image_region.h).
#include "data/image_region.h"

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

ImageRegion read_image_region(const std::string& path, int channels, const CropChooser& choose, JpegDecoder jpeg) {
  HG_CHECK(channels == 1 || channels == 3, "read_image_region: channels must be 1 or 3, got ", channels);
  const std::vector<uint8_t> bytes = read_file_bytes(path);
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
  // The filter's reach, plus 2 pixels: at a column-crop edge libjpeg's fancy upsampling lacks its
  // neighbour, so the outermost decoded pixels may differ from a whole-image decode.
  const int64_t mx = resample_reach(b.w, req.out_w) + 2, my = resample_reach(b.h, req.out_h) + 2;
  const PixelRect want{static_cast<int64_t>(std::floor(b.x)) - mx, static_cast<int64_t>(std::floor(b.y)) - my,
                       static_cast<int64_t>(std::ceil(b.x + b.w)) + mx, static_cast<int64_t>(std::ceil(b.y + b.h)) + my};
  JpegRegion r = decode_jpeg(bytes.data(), bytes.size(), path, channels, s, want);
  out.image = std::move(r.image);
  out.box = CropBox{b.x - static_cast<double>(r.x0), b.y - static_cast<double>(r.y0), b.w, b.h};
  out.info.scale = s;
  return out;
}

}  // namespace hg::data
