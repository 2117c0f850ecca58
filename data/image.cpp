// Image file reading and writing through stb_image / stb_image_write. The stb implementations are
// compiled here and only here (the library exposes them to the app and the tests).
#include "data/image.h"

// stb is third-party code: its warnings are not ours to fix.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_JPEG
#define STBI_ONLY_PNG
#define STBI_ONLY_BMP
#define STBI_ONLY_PNM
#include <stb_image.h>
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
#pragma GCC diagnostic pop

#include <memory>

namespace hg::data {

Image read_image(const std::string& path, int channels) {
  HG_CHECK(channels == 1 || channels == 3, "read_image: channels must be 1 or 3, got ", channels);
  int w = 0, h = 0, file_channels = 0;
  // stb converts to the requested channel count itself; its failure reason is thread-local.
  std::unique_ptr<stbi_uc, void (*)(void*)> data(stbi_load(path.c_str(), &w, &h, &file_channels, channels),
                                                 stbi_image_free);
  if (!data) throw CorruptImage(path, stbi_failure_reason() ? stbi_failure_reason() : "unknown error");
  if (w <= 0 || h <= 0) throw CorruptImage(path, str("empty image ", w, "x", h));
  Image img;
  img.height = h;
  img.width = w;
  img.channels = channels;
  img.pixels.assign(data.get(), data.get() + static_cast<size_t>(w) * h * channels);
  return img;
}

bool probe_image(const std::string& path, std::string* reason) {
  int w = 0, h = 0, c = 0;
  if (stbi_info(path.c_str(), &w, &h, &c) && w > 0 && h > 0) return true;
  if (reason) *reason = stbi_failure_reason() ? stbi_failure_reason() : "not an image";
  return false;
}

namespace {
void check_writable(const char* fn, const std::string& path, const Image& img) {
  HG_CHECK(img.height > 0 && img.width > 0 && img.channels >= 1 && img.channels <= 4 &&
               img.pixels.size() == static_cast<size_t>(img.height * img.width * img.channels),
           fn, ": bad image for '", path, "': ", img.height, "x", img.width, "x", img.channels, " with ",
           img.pixels.size(), " bytes");
}
}  // namespace

void write_png(const std::string& path, const Image& img) {
  check_writable("write_png", path, img);
  int ok = stbi_write_png(path.c_str(), int(img.width), int(img.height), int(img.channels), img.pixels.data(),
                          int(img.width * img.channels));
  HG_CHECK(ok, "write_png: cannot write '", path, "'");
}

void write_jpeg(const std::string& path, const Image& img, int quality) {
  check_writable("write_jpeg", path, img);
  int ok = stbi_write_jpg(path.c_str(), int(img.width), int(img.height), int(img.channels), img.pixels.data(),
                          quality);
  HG_CHECK(ok, "write_jpeg: cannot write '", path, "'");
}

void write_bmp(const std::string& path, const Image& img) {
  check_writable("write_bmp", path, img);
  int ok = stbi_write_bmp(path.c_str(), int(img.width), int(img.height), int(img.channels), img.pixels.data());
  HG_CHECK(ok, "write_bmp: cannot write '", path, "'");
}

}  // namespace hg::data
