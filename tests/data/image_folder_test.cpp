// Tests of ImageFolder over a temporary tree of mixed files (written here with stb_image_write), and of
// the Fashion-MNIST PNG export read back as an ImageFolder.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <zlib.h>

#include <fstream>

#include <cmath>
#include <filesystem>
#include <memory>
#include <sstream>

#include "captured_log.h"
#include "core/error.h"
#include "data/export.h"
#include "data/from_config.h"
#include "data/idx_dataset.h"
#include "data/image_complete.h"
#include "data/image_folder.h"
#include "data/synthetic.h"
#include "temp_dir.h"
#include "test_util.h"
#include "train/config.h"

namespace fs = std::filesystem;
using hg::data::Image;
using hg::data::ImageFolder;
using hg::data::ImageFolderOptions;

namespace {

struct Tree {
  Image rgb = hg::test::random_image(5, 4, 3, 1);
  Image jpg = hg::test::random_image(8, 8, 3, 2, 100, 140);  // smooth-ish range: JPEG stays close
  Image gray = hg::test::random_image(6, 3, 1, 3);
  Image rgba = hg::test::random_image(4, 7, 4, 4);
  Image bmp = hg::test::random_image(3, 5, 3, 5);
  Image ppm = hg::test::random_image(2, 3, 3, 6);
  Image deep = hg::test::random_image(4, 4, 3, 7);

  // <root>/train/{bird,cat,dog}: sorted, bird = 0, cat = 1, dog = 2.
  explicit Tree(const hg::test::TempDir& t) {
    fs::create_directories(t.path() / "train/bird");
    fs::create_directories(t.path() / "train/cat");
    fs::create_directories(t.path() / "train/dog/sub");
    hg::data::write_png(t / "train/bird/a.png", rgb);
    hg::data::write_jpeg(t / "train/bird/b.JPG", jpg, 100);
    hg::data::write_png(t / "train/cat/gray.png", gray);
    hg::data::write_png(t / "train/cat/rgba.png", rgba);
    hg::data::write_bmp(t / "train/cat/x.bmp", bmp);
    hg::test::write_bytes(t / "train/cat/p.ppm",
                          "P6\n3 2\n255\n" + std::string(ppm.pixels.begin(), ppm.pixels.end()));
    hg::data::write_png(t / "train/dog/sub/deep.png", deep);
    hg::test::write_bytes(t / "train/dog/corrupt.png", "this is not a png file at all, just text");
    hg::test::write_bytes(t / "train/dog/notes.txt", "ignored");
    // A whole PNG with spoilt pixel data: the scan passes it (header and end are whole), decoding
    // fails.
    hg::data::write_png(t / "full.png", hg::test::random_image(32, 32, 3, 8));
    std::string bytes = hg::test::read_bytes(t / "full.png");
    for (size_t i = 60; i < bytes.size() - 20; ++i) bytes[i] = char(0xff);
    hg::test::write_bytes(t / "train/dog/undecodable.png", bytes);
  }
};

using hg::test::error_of;

int luma(const Image& img, int64_t p) {  // PIL's RGB -> L rule (ITU-R 601-2, rounded)
  return (img.pixels[size_t(p * img.channels)] * 19595 +
          img.pixels[size_t(p * img.channels + 1)] * 38470 +
          img.pixels[size_t(p * img.channels + 2)] * 7471 + 0x8000) >>
         16;
}

}  // namespace

TEST(ImageFolder, MixedFilesRgb) {
  hg::test::TempDir tmp;
  Tree tree(tmp);
  ImageFolder ds(tmp.path().string(), "train");
  EXPECT_EQ(ds.classes(), (std::vector<std::string>{"bird", "cat", "dog"}));
  // a, b, gray, p, rgba, x, sub/deep, undecodable: corrupt.png fails its header check, notes.txt is
  // no image.
  ASSERT_EQ(ds.size(), 8);
  EXPECT_EQ(ds.corrupt_skipped(), 1);
  EXPECT_EQ(ds.corrupt_files().at(0), tmp / "train/dog/corrupt.png");
  const std::vector<int64_t> labels = {0, 0, 1, 1, 1, 1, 2, 2};
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(ds.label(i), labels[size_t(i)]) << ds.path(i);

  auto expect_rgb = [&](int64_t index, const Image& ref, int tolerance) {
    SCOPED_TRACE(ds.path(index));
    hg::data::Sample s = ds.get(index);
    EXPECT_EQ(s.label, labels[size_t(index)]);
    ASSERT_EQ(s.image.channels, 3);
    ASSERT_EQ(s.image.height, ref.height);
    ASSERT_EQ(s.image.width, ref.width);
    int worst = 0;
    for (int64_t p = 0; p < ref.height * ref.width; ++p)
      for (int c = 0; c < 3; ++c) {
        const int want = ref.channels == 1 ? ref.pixels[size_t(p)] : ref.pixels[size_t(p * ref.channels + c)];
        worst = std::max(worst, std::abs(int(s.image.pixels[size_t(p * 3 + c)]) - want));
      }
    EXPECT_LE(worst, tolerance);
  };
  expect_rgb(0, tree.rgb, 0);
  expect_rgb(1, tree.jpg, 12);   // lossy
  expect_rgb(2, tree.gray, 0);   // gray replicated
  expect_rgb(3, tree.ppm, 0);
  expect_rgb(4, tree.rgba, 0);   // alpha dropped
  expect_rgb(5, tree.bmp, 0);
  expect_rgb(6, tree.deep, 0);   // nested folders count for their class

  // undecodable.png fails to decode: skipped (counted once) and replaced by its successor (wrapping
  // to 0).
  hg::data::Sample s = ds.get(7);
  EXPECT_EQ(s.label, 0);
  EXPECT_EQ(s.image.pixels, ds.get(0).image.pixels);
  EXPECT_EQ(ds.corrupt_skipped(), 2);
  ds.get(7);
  EXPECT_EQ(ds.corrupt_skipped(), 2);
}

TEST(ImageFolder, GrayscaleModel) {
  hg::test::TempDir tmp;
  Tree tree(tmp);
  ImageFolderOptions opts;
  opts.channels = 1;
  ImageFolder ds(tmp.path().string(), "train", opts);
  hg::data::Sample a = ds.get(0), g = ds.get(2);
  ASSERT_EQ(a.image.channels, 1);
  for (int64_t p = 0; p < 20; ++p) EXPECT_EQ(a.image.pixels[size_t(p)], luma(tree.rgb, p)) << p;
  EXPECT_EQ(g.image.pixels, tree.gray.pixels);
}

// A colour PNG for a gray model was stb's conversion, which truncates where PIL's convert("L")
// rounds: most pixels one level darker than timm's. The values are PIL 12's, RGB and RGBA.
TEST(ImageFolder, AColourImageForAGrayModelIsPilsConvertL) {
  hg::test::TempDir tmp;
  Image rgb;
  rgb.height = 1;
  rgb.width = 3;
  rgb.channels = 3;
  rgb.pixels = {10, 200, 30, 255, 0, 0, 1, 2, 250};
  hg::data::write_png(tmp / "rgb.png", rgb);
  EXPECT_EQ(hg::data::read_image(tmp / "rgb.png", 1).pixels, (std::vector<uint8_t>{124, 76, 30}));
  Image rgba;
  rgba.height = rgba.width = 1;
  rgba.channels = 4;
  rgba.pixels = {10, 200, 30, 7};
  hg::data::write_png(tmp / "rgba.png", rgba);
  EXPECT_EQ(hg::data::read_image(tmp / "rgba.png", 1).pixels, (std::vector<uint8_t>{124}));
}

// Skipping passes over a few bad files; when many that the scan passed fail later (a folder made
// unreadable mid-run, a failing disk), the run stops rather than train on what is left.
TEST(ImageFolder, SkippingManyFilesThatFailAfterTheScanStops) {
  hg::test::TempDir tmp;
  const hg::data::Image img = hg::test::random_image(8, 8, 3, 5);
  fs::create_directories(tmp / "train/cat");
  fs::create_directories(tmp / "train/dog");
  for (int i = 0; i < 24; ++i)
    hg::data::write_png(
        tmp / ("train/" + std::string(i < 12 ? "cat" : "dog") + "/" + std::to_string(i) + ".png"),
        img);
  ImageFolder ds(tmp.path().string(), "train", {});
  ASSERT_EQ(ds.size(), 24);
  const auto spoil = [&](int i) {  // after the scan
    std::ofstream f(tmp / ("train/dog/" + std::to_string(i) + ".png"), std::ios::trunc);
    f << "gone";
  };
  for (int i = 12; i < 22; ++i) spoil(i);
  EXPECT_EQ(ds.get(12).image.pixels, ds.get(22).image.pixels);  // 10 (the least limit): passed over
  EXPECT_EQ(ds.corrupt_skipped(), 10);
  spoil(22);
  const std::string msg = error_of([&] { ds.get(22); });
  EXPECT_NE(msg.find("11 of the 24 images"), std::string::npos) << msg;
  EXPECT_NE(msg.find("22.png"), std::string::npos) << msg;
}

TEST(ImageFolder, CorruptPolicyError) {
  hg::test::TempDir tmp;
  Tree tree(tmp);
  ImageFolderOptions opts;
  opts.corrupt = hg::data::CorruptPolicy::error;
  std::string msg = error_of([&] { ImageFolder(tmp.path().string(), "train", opts); });
  EXPECT_NE(msg.find("corrupt.png"), std::string::npos) << msg;
  fs::remove(tmp.path() / "train/dog/corrupt.png");
  ImageFolder ds(tmp.path().string(), "train", opts);
  msg = error_of([&] { ds.get(ds.size() - 1); });
  EXPECT_NE(msg.find("undecodable.png"), std::string::npos) << msg;
}

// The folder scan names why a file is no image it can read, from the file's first bytes (as
// read_image does): an empty file, a text file (its first bytes), a PNG too large to decode.
TEST(ImageFolder, ScanNamesWhyAFileIsSkipped) {
  std::string huge_png("\x89PNG\r\n\x1a\n", 8);
  huge_png += std::string("\0\0\0\x0dIHDR", 8);
  huge_png += std::string("\0\0\xc3\x50\0\0\xc3\x50\x08\0\0\0\0", 13);  // 50000 x 50000, 8-bit gray
  huge_png += std::string("\0\0\0\0", 4);                               // (CRC, not checked)
  // 20000 x 20000 gray: stb_image would decode it (under its 2^30 bytes), the 2^28-pixel cap not
  std::string cap_png = huge_png;
  cap_png.replace(16, 8, std::string("\0\0\x4e\x20\0\0\x4e\x20", 8));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty file"},
      {"hello, I am text", "starts with bytes 68 65 6c 6c 6f 2c 20 49"},
      {std::string("GIF89a\x01\0\x01\0", 10), "a GIF file, which haargrad does not decode"},
      {std::string("RIFF\x10\0\0\0WEBPVP8 ", 16), "a WebP file, which haargrad does not decode"},
      {huge_png, "a 50000x50000 PNG: too large to decode"},
      {cap_png, "a 20000x20000 png: more than the 268435456 pixels allowed"}};
  for (const auto& [bytes, reason] : cases) {
    hg::test::TempDir tmp;
    fs::create_directories(tmp.path() / "train/cls");
    hg::data::write_png(tmp / "train/cls/ok.png", hg::test::random_image(2, 2, 3, 9));
    hg::test::write_bytes(tmp / "train/cls/bad.png", bytes);
    ImageFolderOptions opts;
    opts.corrupt = hg::data::CorruptPolicy::error;
    const std::string msg = error_of([&] { ImageFolder(tmp.path().string(), "train", opts); });
    EXPECT_NE(msg.find("bad.png"), std::string::npos) << msg;
    EXPECT_NE(msg.find(reason), std::string::npos) << msg;
  }
}

// A PNG cut short (a download or copy that stopped) is caught by the folder scan, as a cut-off JPEG
// is: it was passed and failed only when read in training, hours later under corrupt_images: error,
// and in evaluation it was replaced by a neighbour image counted twice. A whole PNG with bytes
// after its IEND chunk still passes.
TEST(ImageFolder, APngCutShortIsCaughtByTheScan) {
  hg::test::TempDir tmp;
  fs::create_directories(tmp.path() / "train/cls");
  hg::data::write_png(tmp / "full.png", hg::test::random_image(32, 32, 3, 8));
  const std::string bytes = hg::test::read_bytes(tmp / "full.png");
  hg::test::write_bytes(tmp / "train/cls/ok.png", bytes);
  hg::test::write_bytes(tmp / "train/cls/tail.png", bytes + "trailing bytes");
  ImageFolderOptions opts;
  opts.corrupt = hg::data::CorruptPolicy::error;
  EXPECT_EQ(ImageFolder(tmp.path().string(), "train", opts).size(), 2);
  for (const size_t keep : {size_t(40), bytes.size() / 2, bytes.size() - 4}) {
    SCOPED_TRACE(keep);
    hg::test::write_bytes(tmp / "train/cls/cut.png", bytes.substr(0, keep));
    const std::string msg = error_of([&] { ImageFolder(tmp.path().string(), "train", opts); });
    EXPECT_NE(msg.find("cut.png"), std::string::npos) << msg;
    EXPECT_NE(msg.find("a png cut short"), std::string::npos) << msg;
  }
}

// A PNG with a flipped bit in its pixel data decoded to other pixels unsaid (stb_image checks no
// CRC and no Adler-32; PIL fails, "broken data stream"): a critical chunk whose CRC fails is a
// corrupt image, named with the chunk. An ancillary chunk's bad CRC is let pass, as libpng does.
TEST(ImageFolder, APngWhoseDataFailsItsCrcIsCorrupt) {
  hg::test::TempDir tmp;
  hg::data::write_png(tmp / "full.png", hg::test::random_image(32, 32, 3, 8));
  const std::string bytes = hg::test::read_bytes(tmp / "full.png");
  const size_t idat = bytes.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  std::string flipped = bytes;
  flipped[idat + 4 + 20] = static_cast<char>(flipped[idat + 4 + 20] ^ 0x10);  // in its data
  hg::test::write_bytes(tmp / "flipped.png", flipped);
  const std::string msg = error_of([&] { hg::data::read_image(tmp / "flipped.png", 3); });
  EXPECT_NE(msg.find("flipped.png"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a png whose IDAT chunk at byte " + std::to_string(idat - 4) +
                     " fails its CRC check"),
            std::string::npos)
      << msg;
  EXPECT_EQ(hg::data::read_image(tmp / "full.png", 3).pixels.size(), 32u * 32 * 3);
  // an ancillary chunk (tEXt) with a wrong CRC before IEND: read as before
  std::string text = bytes;
  const std::string chunk = std::string("\0\0\0\x04tEXta\0bc", 12) + "\xde\xad\xbe\xef";
  text.insert(text.size() - 12, chunk);
  hg::test::write_bytes(tmp / "text.png", text);
  EXPECT_EQ(hg::data::read_image(tmp / "text.png", 3).pixels,
            hg::data::read_image(tmp / "full.png", 3).pixels);
}

// A PNG over stb_image's 2^30 decoded bytes failed with stb's bare "Image too large to decode":
// its size (from its IHDR) and the pixel cap are named, as the folder scan names them.
TEST(ImageFolder, APngOverThePixelCapIsNamedWithItsSize) {
  hg::test::TempDir tmp;
  const auto chunk = [](const std::string& type, const std::string& data) {
    const auto be32 = [](uint32_t v) {
      return std::string{char(v >> 24), char((v >> 16) & 0xff), char((v >> 8) & 0xff),
                         char(v & 0xff)};
    };
    const std::string td = type + data;
    const uLong crc = crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(td.data()),
                            static_cast<uInt>(td.size()));
    return be32(static_cast<uint32_t>(data.size())) + td + be32(static_cast<uint32_t>(crc));
  };
  const std::string ihdr("\x00\x00\x4e\x20\x00\x00\x4e\x20\x08\x02\x00\x00\x00",
                         13);  // 20000 x 20000 RGB
  hg::test::write_bytes(tmp / "big.png", std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) +
                                             chunk("IDAT", "x") + chunk("IEND", ""));
  const std::string msg = error_of([&] { hg::data::read_image(tmp / "big.png", 3); });
  EXPECT_NE(msg.find("a 20000 x 20000 png: 400000000 pixels is more than the 268435456 allowed"),
            std::string::npos)
      << msg;
}

// A whole JPEG or PNG with bytes after its end marker (zero padding, a video appended to a phone's
// "motion photo") was skipped as "cut short": the scan looked for the marker in the last 64 bytes
// only. It now walks the file's structure to the marker when the last bytes hold none, as PIL and
// libjpeg read such files; a file cut short still fails, also one whose APP1 segment holds an
// end-of-image marker of its own (an EXIF thumbnail's), which the walk steps over.
TEST(ImageFolder, BytesAfterAWholeImageAreIgnoredByTheScan) {
  hg::test::TempDir tmp;
  fs::create_directories(tmp.path() / "train/cls");
  const Image img = hg::test::random_image(16, 24, 3, 8);
  hg::data::write_jpeg(tmp / "full.jpg", img, 90);
  hg::data::write_png(tmp / "full.png", img);
  std::string jpg = hg::test::read_bytes(tmp / "full.jpg");
  // an APP1 segment holding a thumbnail's FF D8 .. FF D9 (its length 200 counts itself)
  std::string app1 = std::string("\xff\xe1\x00\xc8\xff\xd8", 6) + std::string(194, 'x');
  app1 += std::string("\xff\xd9", 2);
  jpg.insert(2, app1);
  const std::string png = hg::test::read_bytes(tmp / "full.png");
  std::string noise(70000, '\0');
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = char((i * 2654435761u) >> 13);
  hg::test::write_bytes(tmp / "train/cls/zeros.jpg", jpg + std::string(100, '\0'));
  hg::test::write_bytes(tmp / "train/cls/noise.jpg", jpg + noise);
  hg::test::write_bytes(tmp / "train/cls/zeros.png", png + std::string(100, '\0'));
  hg::test::write_bytes(tmp / "train/cls/noise.png", png + noise);
  // the walk itself: fill bytes before a restart marker and before the end stay in the scan,
  // stray bytes between segments are skipped (as libjpeg does); a scan cut short is not whole
  const std::string soi_sos = std::string("\xff\xd8\xff\xda\x00\x02", 6);
  const auto whole = [](const std::string& b) {
    return hg::data::jpeg_reaches_end(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  };
  EXPECT_TRUE(whole(soi_sos + "ab" + std::string("\xff\xff\xd0", 3) + "cd" +
                    std::string("\xff\xff\xd9", 3)));
  EXPECT_FALSE(whole(soi_sos + "ab" + std::string("\xff\xff\xd0", 3) + "cd"));
  std::string stray = jpg;
  stray.insert(2 + 202, std::string("\0\0", 2));  // after the APP1 segment
  EXPECT_TRUE(whole(stray + noise));
  EXPECT_FALSE(whole(jpg.substr(0, jpg.size() / 2)));
  ImageFolderOptions opts;
  opts.corrupt = hg::data::CorruptPolicy::error;
  ImageFolder ds(tmp.path().string(), "train", opts);
  ASSERT_EQ(ds.size(), 4);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(ds.get(i).image.width, 24);
  fs::remove_all(tmp.path() / "train/cls");
  fs::create_directories(tmp.path() / "train/cls");
  // cut inside the scan: the thumbnail's marker is inside APP1, so it does not count
  const std::vector<std::pair<std::string, std::string>> cut = {
      {"cut.jpg", jpg.substr(0, jpg.size() / 2) + noise.substr(0, 100)},
      {"cut.png", png.substr(0, png.size() / 2) + noise.substr(0, 100)}};
  for (const auto& [name, bytes] : cut) {
    SCOPED_TRACE(name);
    hg::test::write_bytes((tmp.path() / "train/cls" / name).string(), bytes);
    const std::string msg = error_of([&] { ImageFolder(tmp.path().string(), "train", opts); });
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
    EXPECT_NE(msg.find("cut short"), std::string::npos) << msg;
    fs::remove(tmp.path() / "train/cls" / name);
  }
}

// A binary PPM / PGM or an uncompressed BMP cut short was decoded without an error: stb_image reads
// past the end as zeros (a BMP) or leaves the pixels unset (a PNM: whatever memory held, so the
// same run gave different results). The scan and read_image measure the file against its header.
TEST(ImageFolder, APnmOrBmpCutShortIsNamed) {
  hg::test::TempDir tmp;
  fs::create_directories(tmp.path() / "train/cls");
  std::string pixels(40 * 36 * 3, '\0');
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = char(i * 7);
  const std::string ppm = "P6\n# a comment\n40 36\n255\n" + pixels;
  const std::string pgm = "P5 40 36 255\n" + pixels.substr(0, 40 * 36);
  hg::data::write_bmp(tmp / "full.bmp", hg::test::random_image(9, 8, 3, 4));  // 24-byte rows
  const std::string bmp = hg::test::read_bytes(tmp / "full.bmp");
  hg::test::write_bytes(tmp / "train/cls/a.ppm", ppm);
  hg::test::write_bytes(tmp / "train/cls/b.pgm", pgm);
  hg::test::write_bytes(tmp / "train/cls/c.bmp", bmp);
  ImageFolderOptions opts;
  opts.corrupt = hg::data::CorruptPolicy::error;
  EXPECT_EQ(ImageFolder(tmp.path().string(), "train", opts).size(), 3);
  for (const auto& [name, whole] : std::vector<std::pair<std::string, std::string>>{
           {"a.ppm", ppm}, {"b.pgm", pgm}, {"c.bmp", bmp}}) {
    SCOPED_TRACE(name);
    const fs::path file = tmp.path() / "train/cls" / name;
    hg::test::write_bytes(file, whole.substr(0, whole.size() - 1));
    std::string msg = error_of([&] { ImageFolder(tmp.path().string(), "train", opts); });
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
    EXPECT_NE(msg.find("cut short: its header describes " + std::to_string(whole.size()) +
                       " bytes, the file holds " + std::to_string(whole.size() - 1)),
              std::string::npos)
        << msg;
    msg = error_of([&] { hg::data::read_image(file.string(), 3); });
    EXPECT_NE(msg.find("cut short"), std::string::npos) << msg;
    hg::test::write_bytes(file, whole);
  }
}

// A binary PGM / PPM whose maxval is not 255 kept its samples as stb_image reads them: a
// maxval-100 PGM trained dark, a maxval-1000 PPM nearly black (the high byte of each 16-bit
// sample), where PIL (timm) scales each sample to 0..255 as round(v / maxval * 255). read_image
// scales as PIL does; a 16-bit PGM keeps the high byte of PIL's 16-bit value, as a 16-bit gray PNG
// does.
TEST(ImageFolder, APnmOfAnotherMaxvalIsScaledAsPilScalesIt) {
  hg::test::TempDir tmp;
  const auto samples16 = [](std::initializer_list<int> v) {
    std::string s;
    for (int x : v) s += {char(x >> 8), char(x & 0xff)};
    return s;
  };
  hg::test::write_bytes(tmp / "a.pgm", std::string("P5\n4 1\n100\n") +
                                           std::string{char(0), char(50), char(100), char(25)});
  EXPECT_EQ(hg::data::read_image(tmp / "a.pgm", 3).pixels,
            (std::vector<uint8_t>{0, 0, 0, 128, 128, 128, 255, 255, 255, 64, 64, 64}));
  hg::test::write_bytes(tmp / "b.ppm", "P6 2 1 1000\n" + samples16({1000, 500, 2, 0, 999, 1}));
  EXPECT_EQ(hg::data::read_image(tmp / "b.ppm", 3).pixels,
            (std::vector<uint8_t>{255, 128, 1, 0, 255, 0}));
  hg::test::write_bytes(tmp / "c.pgm", "P5 3 1 1000\n" + samples16({500, 1000, 1}));
  EXPECT_EQ(hg::data::read_image(tmp / "c.pgm", 1).pixels, (std::vector<uint8_t>{128, 255, 0}));
  // maxval 65535: PIL rounds v / 257, where the high byte is 129
  hg::test::write_bytes(tmp / "d.ppm", "P6 1 1 65535\n" + samples16({33024, 0, 65535}));
  EXPECT_EQ(hg::data::read_image(tmp / "d.ppm", 3).pixels, (std::vector<uint8_t>{128, 0, 255}));
  // maxval 255 is read as it is
  hg::test::write_bytes(tmp / "e.pgm",
                        std::string("P5 2 1 255\n") + std::string{char(7), char(200)});
  EXPECT_EQ(hg::data::read_image(tmp / "e.pgm", 1).pixels, (std::vector<uint8_t>{7, 200}));
}

// An RLE-compressed BMP (which PIL reads and stb_image does not) was skipped by the scan as "a bmp
// header stb_image cannot read (bmp of an unsupported kind, or cut short)": a whole file, called
// perhaps cut short. The scan names the compression and what to do.
TEST(ImageFolder, AnRleBmpIsNamedAsSuch) {
  hg::test::TempDir tmp;
  std::string bmp = "BM";
  const auto le = [&](uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) bmp += char((v >> (8 * i)) & 0xff);
  };
  const std::string rle("\x04\x01\x00\x00\x00\x01", 6);  // 4 pixels of colour 1, end
  le(14 + 40 + 8 + uint32_t(rle.size()), 4), le(0, 4), le(14 + 40 + 8, 4);  // file header
  le(40, 4), le(4, 4), le(1, 4), le(1, 2), le(8, 2), le(1, 4);  // 4 x 1, 8 bits, BI_RLE8
  le(uint32_t(rle.size()), 4), le(2835, 4), le(2835, 4), le(2, 4), le(0, 4);
  le(0, 4), le(0x00ffffff, 4);  // the palette: black, white
  hg::test::write_bytes(tmp / "rle.bmp", bmp + rle);
  std::string reason;
  EXPECT_FALSE(hg::data::probe_image(tmp / "rle.bmp", &reason));
  EXPECT_NE(reason.find("an RLE-compressed bmp"), std::string::npos) << reason;
  EXPECT_NE(reason.find("convert it"), std::string::npos) << reason;
}

// A JPEG whose frame header claims more pixels than the cap (a decompression bomb, or a header
// spoilt) passed the scan, which read only its end: it failed when first read, in training (under
// corrupt_images: error, after an epoch's work) or in an evaluation (replaced by a neighbour). The
// scan reads the size in its frame header, as it does a PNG's; a whole JPEG with an EXIF-like
// segment before its frame still passes.
TEST(ImageFolder, AJpegOverThePixelCapIsCaughtByTheScan) {
  hg::test::TempDir tmp;
  fs::create_directories(tmp.path() / "train/cls");
  hg::data::write_jpeg(tmp / "full.jpg", hg::test::random_image(16, 24, 3, 8), 90);
  std::string bytes = hg::test::read_bytes(tmp / "full.jpg");
  // an APP1 segment (its length 3000 counts itself) after the start-of-image marker, as EXIF sits
  const std::string app1 = std::string("\xff\xe1\x0b\xb8", 4) + std::string(2998, 'x');
  bytes.insert(2, app1);
  hg::test::write_bytes(tmp / "train/cls/ok.jpg", bytes);
  ImageFolderOptions opts;
  opts.corrupt = hg::data::CorruptPolicy::error;
  ImageFolder ok(tmp.path().string(), "train", opts);
  ASSERT_EQ(ok.size(), 1);
  EXPECT_EQ(ok.get(0).image.width, 24);
  // the frame header (SOF0): FF C0, length, precision, height, width
  const size_t sof = bytes.find(std::string("\xff\xc0", 2));
  ASSERT_NE(sof, std::string::npos);
  bytes.replace(sof + 5, 4, std::string("\xea\x60\xea\x60", 4));  // 60000 x 60000
  hg::test::write_bytes(tmp / "train/cls/bomb.jpg", bytes);
  const std::string msg = error_of([&] { ImageFolder(tmp.path().string(), "train", opts); });
  EXPECT_NE(msg.find("bomb.jpg"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a 60000x60000 jpeg: more than the 268435456 pixels allowed"),
            std::string::npos)
      << msg;
}

// A top-down BMP (negative height: rows stored first to last, as Windows' DIB sections write
// them), which PIL and stb_image read, was rejected by the folder scan as "a bmp header stb_image
// cannot read": stb's header query gives its height negative. It is read as the image it is.
TEST(ImageFolder, ATopDownBmpIsAnImage) {
  hg::test::TempDir tmp;
  fs::create_directories(tmp.path() / "train/cls");
  const Image img = hg::test::random_image(3, 5, 3, 5);
  hg::data::write_bmp(tmp / "up.bmp", img);  // bottom-up, as BMPs are by default
  std::string bytes = hg::test::read_bytes(tmp / "up.bmp");
  // the same pixels top-down: the height negated, the rows (4-byte aligned) in reverse order
  const uint32_t offset = uint8_t(bytes[10]) | uint8_t(bytes[11]) << 8;
  const int32_t height = -3;
  bytes.replace(22, 4, std::string(reinterpret_cast<const char*>(&height), 4));
  const size_t row = (5 * 3 + 3) / 4 * 4;
  std::string flipped = bytes.substr(0, offset);
  for (int r = 2; r >= 0; --r) flipped += bytes.substr(offset + size_t(r) * row, row);
  hg::test::write_bytes(tmp / "train/cls/down.bmp", flipped);
  ImageFolderOptions opts;
  opts.corrupt = hg::data::CorruptPolicy::error;
  ImageFolder ds(tmp.path().string(), "train", opts);
  ASSERT_EQ(ds.size(), 1);
  EXPECT_EQ(ds.get(0).image.pixels, img.pixels);
}

// A plain-text PGM / PPM (P2 / P3, which PIL reads) was skipped as "not a JPEG, PNG, BMP, PPM or
// PGM file ..., whatever its name says": false of a PPM named .ppm. It is named as the plain kind
// our decoder does not read, with the binary kind (P5 / P6) to convert it to.
TEST(ImageFolder, APlainTextPnmIsNamedAsSuch) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"p3.ppm", "P3\n2 1\n255\n255 0 0 0 255 0\n"}, {"p2.pgm", "P2\n2 1\n255\n0 255\n"}};
  for (const auto& [name, bytes] : cases) {
    hg::test::TempDir tmp;
    fs::create_directories(tmp.path() / "train/cls");
    hg::data::write_png(tmp / "train/cls/ok.png", hg::test::random_image(2, 2, 3, 9));
    hg::test::write_bytes(tmp / ("train/cls/" + name), bytes);
    ImageFolderOptions opts;
    opts.corrupt = hg::data::CorruptPolicy::error;
    const std::string msg = error_of([&] { ImageFolder(tmp.path().string(), "train", opts); });
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
    EXPECT_NE(
        msg.find("a plain-text (ASCII) " + std::string(name[1] == '3' ? "PPM (P3)" : "PGM (P2)")),
        std::string::npos)
        << msg;
    EXPECT_NE(msg.find(name[1] == '3' ? "P6" : "P5"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("whatever its name says"), std::string::npos) << msg;
  }
}

// A symbolic link back into its own class folder is an error naming the class and the loop, not
// the file system's raw message with a path thousands of characters long.
TEST(ImageFolder, ASymlinkLoopIsNamed) {
  hg::test::TempDir tmp;
  fs::create_directories(tmp.path() / "train/cls");
  hg::data::write_png(tmp / "train/cls/ok.png", hg::test::random_image(2, 2, 3, 9));
  fs::create_directory_symlink(tmp.path() / "train/cls", tmp.path() / "train/cls/loop");
  const std::string msg = error_of([&] { ImageFolder(tmp.path().string(), "train", {}); });
  EXPECT_NE(msg.find("class folder 'cls'"), std::string::npos) << msg;
  // the link itself is named: in a large class folder it is hard to find
  EXPECT_NE(msg.find("symbolic link '" + (tmp.path() / "train/cls/loop").string() + "' (-> '" +
                     (tmp.path() / "train/cls").string() + "') leads back"),
            std::string::npos)
      << msg;
  EXPECT_LT(msg.size(), 600u) << msg;
}

// An image link that leads to itself (or two that lead to each other) stopped the listing of the
// whole data set, even under corrupt_images: skip (first said as "a symbolic link leads back into
// a folder above it", then as "a loop of symbolic links"). It is met as a link to nothing is:
// skipped under skip, named with why under error.
TEST(ImageFolder, AFileLinkLoopIsMetAsABrokenLink) {
  hg::test::TempDir tmp;
  fs::create_directories(tmp.path() / "train/cls");
  hg::data::write_png(tmp / "train/cls/ok.png", hg::test::random_image(2, 2, 3, 9));
  fs::create_symlink(tmp.path() / "train/cls/a.png", tmp.path() / "train/cls/a.png");
  ImageFolderOptions skip;
  skip.corrupt = hg::data::CorruptPolicy::skip;
  EXPECT_EQ(ImageFolder(tmp.path().string(), "train", skip).size(), 1);
  ImageFolderOptions error;
  error.corrupt = hg::data::CorruptPolicy::error;
  const std::string msg = error_of([&] { ImageFolder(tmp.path().string(), "train", error); });
  EXPECT_NE(msg.find((tmp.path() / "train/cls/a.png").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("a symbolic link to '" + (tmp.path() / "train/cls/a.png").string() +
                     "', which cannot be followed"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("folder above it"), std::string::npos) << msg;
}

// A class-level link that loops (train/c -> c) was called "a symbolic link to nothing"; one that
// leads nowhere still is.
TEST(ImageFolder, AClassLinkThatLoopsIsNamedAsLooping) {
  hg::test::TempDir tmp;
  fs::create_directories(tmp.path() / "train/cls");
  hg::data::write_png(tmp / "train/cls/ok.png", hg::test::random_image(2, 2, 3, 9));
  fs::create_symlink(tmp.path() / "train/c", tmp.path() / "train/c");
  fs::create_symlink(tmp.path() / "train/gone", tmp.path() / "train/d");
  const hg::test::CapturedLog captured;
  EXPECT_EQ(ImageFolder(tmp.path().string(), "train", {}).size(), 1);
  const std::string log = captured.text();
  EXPECT_NE(log.find("'" + (tmp.path() / "train/c").string() + "' is a symbolic link that loops"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("'" + (tmp.path() / "train/d").string() + "' is a symbolic link to nothing"),
            std::string::npos)
      << log;
}

// A sub-folder of a class folder that cannot be read is named itself, not its class folder: the
// user must find the one folder among thousands whose permissions are wrong.
TEST(ImageFolder, AnUnreadableSubFolderIsNamed) {
  hg::test::TempDir tmp;
  fs::create_directories(tmp.path() / "train/cls/locked");
  hg::data::write_png(tmp / "train/cls/ok.png", hg::test::random_image(2, 2, 3, 9));
  const fs::path locked = tmp.path() / "train/cls/locked";
  fs::permissions(locked, fs::perms::none);
  if (access(locked.c_str(), R_OK) == 0) {  // root (CAP_DAC_OVERRIDE) reads it all the same
    fs::permissions(locked, fs::perms::owner_all);
    GTEST_SKIP() << "a folder with mode 000 is still readable here (running as root?)";
  }
  const std::string msg = error_of([&] { ImageFolder(tmp.path().string(), "train", {}); });
  fs::permissions(locked, fs::perms::owner_all);  // so that the temporary folder can go
  EXPECT_NE(msg.find("'" + locked.string() + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("class folder 'cls'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::make_error_code(std::errc::permission_denied).message()),
            std::string::npos)
      << msg;
}

// A symbolic link to an image that no longer exists (a moved or deleted original) is a corrupt
// image named with its missing target, as torchvision lists it and fails on it; never silently
// dropped from its class.
TEST(ImageFolder, ADanglingImageLinkIsNamedAsCorrupt) {
  hg::test::TempDir tmp;
  fs::create_directories(tmp.path() / "train/cls");
  hg::data::write_png(tmp / "train/cls/ok.png", hg::test::random_image(2, 2, 3, 9));
  fs::create_symlink(tmp.path() / "gone.jpg", tmp.path() / "train/cls/moved.jpg");

  ImageFolder skipping(tmp.path().string(), "train", {});
  EXPECT_EQ(skipping.size(), 1);
  EXPECT_EQ(skipping.corrupt_skipped(), 1);
  ASSERT_EQ(skipping.corrupt_files().size(), 1u);
  EXPECT_EQ(skipping.corrupt_files()[0], (tmp.path() / "train/cls/moved.jpg").string());

  ImageFolderOptions opts;
  opts.corrupt = hg::data::CorruptPolicy::error;
  const std::string msg = error_of([&] { ImageFolder(tmp.path().string(), "train", opts); });
  EXPECT_NE(msg.find("moved.jpg"), std::string::npos) << msg;
  EXPECT_NE(msg.find("gone.jpg"), std::string::npos) << msg;
}

// TIFF and WebP files, which torchvision's ImageFolder loads and our decoders do not, are left out
// with a warning that counts them and names one (not in silence: a set of them would shrink
// unseen); other files (notes, thumbnails databases) stay a debug line.
TEST(ImageFolder, ImagesTorchvisionLoadsButWeCannotAreWarnedAbout) {
  hg::test::TempDir tmp;
  fs::create_directories(tmp.path() / "train/cls");
  hg::data::write_png(tmp / "train/cls/ok.png", hg::test::random_image(2, 2, 3, 9));
  hg::test::write_bytes(tmp / "train/cls/scan.TIF", "II*");
  hg::test::write_bytes(tmp / "train/cls/photo.webp", "RIFF");
  hg::test::write_bytes(tmp / "train/cls/notes.txt", "notes");
  auto captured = std::make_unique<hg::test::CapturedLog>();
  const ImageFolder ds(tmp.path().string(), "train", {});
  const std::string log = captured->text();
  captured.reset();
  EXPECT_EQ(ds.size(), 1);
  EXPECT_NE(log.find("2 TIFF / WebP files"), std::string::npos) << log;
  EXPECT_TRUE(log.find("photo.webp") != std::string::npos ||
              log.find("scan.TIF") != std::string::npos)
      << log;
  EXPECT_EQ(log.find("notes.txt"), std::string::npos) << log;
}

// A file or folder name is anyone's bytes: the warnings wrote them raw, so a "\n" in a corrupt
// file's name faked a log line of its own and an ESC sequence reached the terminal. They are
// written escaped (core/utf8.h printable); the file is still the one skipped.
TEST(ImageFolder, WarningsShowControlCharactersInNamesEscaped) {
  hg::test::TempDir tmp;
  const std::string bad = "bad\n[warning] fake line\x1b[2J.png";
  fs::create_directories(tmp.path() / "train/cls");
  fs::create_directories(tmp.path() / "train/empty\x1b]0;title\x07");
  hg::data::write_png(tmp / "train/cls/ok.png", hg::test::random_image(2, 2, 3, 9));
  hg::test::write_bytes(tmp / ("train/cls/" + bad), "not an image");
  auto captured = std::make_unique<hg::test::CapturedLog>();
  const ImageFolder ds(tmp.path().string(), "train", {});  // corrupt_images: skip
  const std::string log = captured->text();
  captured.reset();
  EXPECT_EQ(ds.size(), 1);
  EXPECT_EQ(ds.corrupt_skipped(), 1);
  EXPECT_NE(log.find("skipping corrupt image '" + (tmp.path() / "train/cls").string() +
                     "/bad\\n[warning] fake line\\x1b[2J.png'"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("class folder 'empty\\x1b]0;title\\x07'"), std::string::npos) << log;
  EXPECT_EQ(log.find('\x1b'), std::string::npos) << log;
  EXPECT_EQ(log.find('\x07'), std::string::npos) << log;
  EXPECT_EQ(log.find("bad\n"), std::string::npos) << log;
  // the error of corrupt_images: error names the file escaped too
  ImageFolderOptions strict;
  strict.corrupt = hg::data::CorruptPolicy::error;
  const std::string msg =
      hg::test::error_of([&] { ImageFolder(tmp.path().string(), "train", strict); });
  EXPECT_NE(msg.find("bad\\n[warning] fake line\\x1b[2J.png"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\x1b'), std::string::npos) << msg;
}

// Hidden files and folders in a class folder (.ipynb_checkpoints, macOS's ._x.png) are not part
// of the set: neither trained on nor counted as corrupt.
TEST(ImageFolder, HiddenFilesAreNotImagesOfTheSet) {
  hg::test::TempDir tmp;
  fs::create_directories(tmp.path() / "train/cls/.ipynb_checkpoints");
  hg::data::write_png(tmp / "train/cls/ok.png", hg::test::random_image(2, 2, 3, 9));
  hg::data::write_png(tmp / "train/cls/.ipynb_checkpoints/ok-checkpoint.png",
                      hg::test::random_image(2, 2, 3, 10));
  hg::test::write_bytes(tmp / "train/cls/._ok.png", "macOS resource fork");
  ImageFolderOptions opts;
  opts.corrupt = hg::data::CorruptPolicy::error;
  const ImageFolder ds(tmp.path().string(), "train", opts);
  EXPECT_EQ(ds.size(), 1);
  EXPECT_EQ(ds.corrupt_skipped(), 0);
}

// validate's dataset: the validation split, with the train split's class order (its class
// folders' names: its files are not read) or, with no train split, its own.
TEST(ImageFolder, ValidationSplitAlone) {
  hg::test::TempDir tmp;
  for (const char* c : {"train/a", "train/b", "train/c", "validation/b", "validation/c"})
    fs::create_directories(tmp.path() / c);
  hg::test::write_bytes(tmp / "train/a/not-read.png", "never read: no image");
  hg::data::write_png(tmp / "validation/b/0.png", hg::test::random_image(2, 2, 3, 1));
  hg::data::write_png(tmp / "validation/c/0.png", hg::test::random_image(2, 2, 3, 2));
  hg::train::Config cfg;
  cfg.dataset = "image_folder";
  cfg.data_dir = tmp.path().string();
  cfg.corrupt_images = "error";
  auto val = hg::data::make_val_dataset(cfg);
  ASSERT_EQ(val->size(), 2);
  EXPECT_EQ(val->get(0).label, 1);  // b is the train split's second class
  EXPECT_EQ(val->get(1).label, 2);
  // a checkpoint of more classes than the data names (validate of another data set) is said, as
  // training says it; one of as many is not
  const auto log_of = [&](int64_t classes) {
    cfg.num_classes = classes;
    const hg::test::CapturedLog captured;
    hg::data::make_val_dataset(cfg);
    return captured.text();
  };
  EXPECT_EQ(log_of(3), "");
  const std::string more = log_of(5);
  EXPECT_NE(more.find("num_classes is 5 but the train split"), std::string::npos) << more;
  EXPECT_NE(more.find("has 3 classes"), std::string::npos) << more;
  fs::remove_all(tmp.path() / "train");
  cfg.num_classes = 1000;
  val = hg::data::make_val_dataset(cfg);
  EXPECT_EQ(val->get(0).label, 0);  // its own folders: b first
}

// timm finds a split folder by its synonyms (timm.data.dataset_factory._search_split): its default
// val_split 'validation' reads DIR/val (or valid, eval, evaluation), train_split 'train' reads
// DIR/training. A timm user's DIR/val was refused ("'DIR/validation' is not a folder").
TEST(ImageFolder, ASplitFolderIsFoundByTimmsSynonyms) {
  hg::test::TempDir tmp;
  for (const char* c : {"training/a", "training/b", "val/b"})
    fs::create_directories(tmp.path() / c);
  hg::data::write_png(tmp / "training/a/0.png", hg::test::random_image(2, 2, 3, 1));
  hg::data::write_png(tmp / "training/b/0.png", hg::test::random_image(2, 2, 3, 2));
  hg::data::write_png(tmp / "val/b/0.png", hg::test::random_image(2, 2, 3, 3));
  const ImageFolder val(tmp.path().string(), "validation");
  EXPECT_EQ(val.size(), 1);
  EXPECT_NE(val.describe().find((tmp.path() / "val").string()), std::string::npos)
      << val.describe();
  EXPECT_EQ(ImageFolder(tmp.path().string(), "train").size(), 2);
  hg::train::Config cfg;
  cfg.dataset = "image_folder";
  cfg.data_dir = tmp.path().string();
  auto v = hg::data::make_val_dataset(cfg);  // the classes of DIR/training: b is the second
  ASSERT_EQ(v->size(), 1);
  EXPECT_EQ(v->get(0).label, 1);
  // no synonym of a train split is a validation split, and other names are not searched
  // (DIR/val itself holds class folders: it is named as a split folder that has no train split)
  const std::string eval = error_of([&] { ImageFolder((tmp.path() / "val").string(), "train"); });
  EXPECT_NE(eval.find("it has no 'train' split"), std::string::npos) << eval;
  fs::rename(tmp.path() / "training", tmp.path() / "mine");
  const std::string mine = error_of([&] { ImageFolder(tmp.path().string(), "train"); });
  EXPECT_NE(mine.find("'" + (tmp.path() / "train").string() + "' does not exist"),
            std::string::npos)
      << mine;
  hg::test::write_bytes((tmp.path() / "train").string(), "a file, not a split");
  const std::string file = error_of([&] { ImageFolder(tmp.path().string(), "train"); });
  EXPECT_NE(file.find("'" + (tmp.path() / "train").string() + "' is not a folder"),
            std::string::npos)
      << file;
}

// val_split is a split name looked for in data_dir (timm: "validation", or its other names). Given
// a path, it was read (as timm's os.path.join reads it) with the log line "split '/x/holdout' is
// the folder '/x/holdout' (no '/x/holdout' in 'DIR'; timm's names of the split)", and a missing
// one was "not a folder (root 'DIR', split '/x/nothere')", as if DIR had been searched. The log
// and the error say what was looked for, under which key, and where.
TEST(ImageFolder, ASplitGivenAsAPathSaysWhatWasLookedForAndWhere) {
  hg::test::TempDir tmp;
  for (const char* c : {"data/train/a", "data/test/a", "holdout/a"}) {
    fs::create_directories(tmp.path() / c);
    hg::data::write_png(tmp / (std::string(c) + "/0.png"), hg::test::random_image(2, 2, 3, 1));
  }
  hg::train::Config cfg;
  cfg.dataset = "image_folder";
  cfg.data_dir = tmp / "data";
  cfg.val_split = tmp / "holdout";
  {
    const hg::test::CapturedLog log;
    EXPECT_EQ(hg::data::make_datasets(cfg).val->size(), 1);
    EXPECT_NE(
        log.text().find("val_split '" + cfg.val_split +
                        "' is a path, not a split name: reading the folder '" + cfg.val_split +
                        "' (absolute, so data_dir '" + cfg.data_dir + "' is not used for it)"),
        std::string::npos)
        << log.text();
  }
  {  // a dataset with more classes than num_classes: the key to set, and to what
    hg::train::Config few = cfg;
    fs::create_directories(tmp.path() / "data/train/b");
    hg::data::write_png(tmp / "data/train/b/0.png", hg::test::random_image(2, 2, 3, 2));
    few.num_classes = 1;
    const std::string m = error_of([&] { hg::data::make_datasets(few); });
    EXPECT_NE(m.find("has 2 classes but num_classes is 1: set num_classes (--num-classes) to at "
                     "least 2"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("to evaluate it, leave out the class folders it was not trained on"),
              std::string::npos)
        << m;
    fs::remove_all(tmp.path() / "data/train/b");
  }
  {  // timm's "no validation": no validation set, never data_dir itself (its split folders as
     // classes); validate's reader names the empty key
    hg::train::Config none = cfg;
    none.val_split = "";
    const hg::data::Datasets d = hg::data::make_datasets(none);
    EXPECT_EQ(d.val, nullptr);
    EXPECT_EQ(d.train->size(), 1);
    const std::string m = error_of([&] { hg::data::make_val_dataset(none); });
    EXPECT_NE(m.find("val_split is empty"), std::string::npos) << m;
  }
  cfg.val_split = tmp / "nothere";
  std::string msg = error_of([&] { hg::data::make_datasets(cfg); });
  EXPECT_NE(msg.find("'" + cfg.val_split + "' does not exist (val_split '" + cfg.val_split +
                     "' is a path, not a split name (absolute, so data_dir '" + cfg.data_dir +
                     "' is not used for it); a split is a folder name such as train, "
                     "validation or val, looked for in data_dir); '" +
                     cfg.data_dir + "' holds 'test', 'train'"),
            std::string::npos)
      << msg;
  // a name: data_dir and timm's other names for it, all searched, are named
  cfg.val_split = "validation";
  msg = error_of([&] { hg::data::make_val_dataset(cfg); });
  EXPECT_NE(msg.find("(val_split 'validation' looked for in data_dir '" + cfg.data_dir +
                     "', as timm's other names for it too: 'val', 'valid', 'eval', "
                     "'evaluation')"),
            std::string::npos)
      << msg;
  // an IDX split is a name too: a path is said to be none
  msg = error_of([&] { hg::data::IdxDataset(cfg.data_dir, tmp / "holdout", 1); });
  EXPECT_NE(msg.find("it is a name, not a path: the files are looked for in data_dir '" +
                     cfg.data_dir + "'"),
            std::string::npos)
      << msg;
}

// timm reads a tar file as a dataset (its tar readers); here data_dir must be a folder, and an
// archive was "not a folder" with nothing on what to do. It is named as an archive to unpack.
TEST(ImageFolder, AnArchiveAsDataDirIsNamedAsSuch) {
  hg::test::TempDir tmp;
  for (const std::string name : {"imagenet.tar", "data.tar.gz", "data.tgz", "data.zip"}) {
    hg::test::write_bytes(tmp / name, "not a folder");
    const std::string msg = error_of([&] { ImageFolder(tmp / name, "train"); });
    EXPECT_NE(msg.find(hg::str("'", tmp / name, "' is an archive")), std::string::npos) << msg;
    EXPECT_NE(msg.find("unpack it"), std::string::npos) << msg;
  }
  hg::test::write_bytes(tmp / "notes.txt", "not a folder");
  const std::string msg = error_of([&] { ImageFolder(tmp / "notes.txt", "train"); });
  EXPECT_NE(msg.find("is not a folder"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("archive"), std::string::npos) << msg;
}

// configs/fashion_mnist.yaml with --dataset image_folder (or an image config pointed at the IDX
// folder) said the split folder is missing and the root "holds no split folders". The IDX files
// there are named, with the dataset key.
TEST(ImageFolder, AFolderOfIdxFilesNamesTheDatasetKey) {
  hg::test::TempDir tmp;
  hg::test::write_bytes(tmp / "train-images-idx3-ubyte.gz", "x");
  hg::test::write_bytes(tmp / "t10k-labels-idx1-ubyte", "x");
  const std::string msg = error_of([&] { ImageFolder(tmp.path().string(), "train"); });
  EXPECT_NE(msg.find("holds IDX files (e.g. 't10k-labels-idx1-ubyte')"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dataset: idx"), std::string::npos) << msg;
}

TEST(ImageFolder, LayoutErrors) {
  hg::test::TempDir tmp;
  fs::create_directories(tmp.path() / "flat/train");
  hg::data::write_png(tmp / "flat/train/1.png", hg::test::random_image(2, 2, 3, 9));
  hg::data::write_png(tmp / "flat/train/2.png", hg::test::random_image(2, 2, 3, 10));
  std::string msg = error_of([&] { ImageFolder((tmp.path() / "flat").string(), "train"); });
  EXPECT_NE(msg.find("no class sub-folders"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected layout"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 images"), std::string::npos) << msg;

  msg = error_of([&] { ImageFolder(tmp.path().string(), "nowhere"); });
  EXPECT_NE(msg.find("nowhere"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected layout"), std::string::npos) << msg;

  fs::create_directories(tmp.path() / "empty/train/cls");
  msg = error_of([&] { ImageFolder((tmp.path() / "empty").string(), "train"); });
  EXPECT_NE(msg.find("no readable images"), std::string::npos) << msg;
}

// data_dir given as a split folder itself (torchvision's ImageFolder takes root='.../train'): the
// error listed every class folder as the splits there are (1000 names for ImageNet) and did not say
// what was wrong. It says the folder looks like a split, with the data_dir and split that would
// read it; a listing of other folders stops after a few names.
TEST(ImageFolder, ADataDirThatIsASplitFolderIsNamedAsSuch) {
  hg::test::TempDir tmp;
  for (int i = 0; i < 30; ++i) {
    const std::string cls = "n0" + std::to_string(1000 + i);
    fs::create_directories(tmp.path() / "imagenet/train" / cls);
    hg::data::write_png(tmp / ("imagenet/train/" + cls + "/1.png"),
                        hg::test::random_image(2, 2, 3, 9));
  }
  const std::string root = tmp / "imagenet/train";
  std::string msg = error_of([&] { ImageFolder(root, "train"); });
  EXPECT_NE(msg.find("'" + root + "' looks like a split folder itself"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--data-dir " + (tmp / "imagenet") + " --train-split train"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("n01029"), std::string::npos) << msg;  // not every class listed
  EXPECT_LT(msg.size(), 1000u) << msg;

  // folders that hold no images directly: a short listing of them, with how many there are
  fs::create_directories(tmp.path() / "many");
  // the name through hg::str: GCC 12 warned of an overlapping memcpy in `"s" + std::to_string(..)`
  // (a false -Wrestrict in the std::string::insert it inlines)
  for (int i = 0; i < 30; ++i) fs::create_directories(tmp.path() / "many" / hg::str("s", 10 + i));
  msg = error_of([&] { ImageFolder(tmp / "many", "train"); });
  EXPECT_EQ(msg.find("looks like a split"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'s10', 's11'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("30 folders"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("'s39'"), std::string::npos) << msg;
}

// The ImageNet recipes (configs/convnext_tiny.yaml, wtconvnext_tiny.yaml) ship with data_dir "",
// to be set: run as the README shows them without it, the error was "the data folder '' does not
// exist". It says data_dir is not set and how to set it, for training and for validate.
TEST(ImageFolder, AnUnsetDataDirIsNamedAsSuch) {
  const hg::train::Config cfg =
      hg::train::load_config(std::string(HAARGRAD_SOURCE_DIR) + "/configs/convnext_tiny.yaml");
  ASSERT_EQ(cfg.data_dir, "");
  for (const std::string& msg : {error_of([&] { hg::data::make_datasets(cfg); }),
                                 error_of([&] { hg::data::make_val_dataset(cfg); })}) {
    EXPECT_NE(msg.find("data_dir is not set"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--data-dir"), std::string::npos) << msg;
  }
}

// val_split naming the train split (by its name, or its folder by path) was taken unsaid: every
// eval figure, model_best and checkpoint_hist then ranked by training-set accuracy. It is warned.
TEST(ImageFolder, AValSplitThatIsTheTrainSplitIsWarned) {
  hg::test::TempDir tmp;
  for (const char* split : {"train", "val"})
    for (const char* cls : {"cat", "dog"}) {
      fs::create_directories(tmp.path() / split / cls);
      hg::data::write_png(tmp / (std::string(split) + "/" + cls + "/i.png"),
                          hg::test::random_image(3, 3, 3, 31));
    }
  hg::train::Config cfg;
  cfg.dataset = "image_folder";
  cfg.data_dir = tmp.path().string();
  cfg.num_classes = 2;
  cfg.corrupt_images = "skip";
  for (const std::string& val : {std::string("train"), (tmp.path() / "./train").string()}) {
    cfg.val_split = val;
    hg::test::CapturedLog log;
    (void)hg::data::make_datasets(cfg);
    EXPECT_NE(log.text().find("val_split '" + val + "' reads the train split's data"),
              std::string::npos)
        << log.text();
  }
  cfg.val_split = "val";
  hg::test::CapturedLog log;
  (void)hg::data::make_datasets(cfg);
  EXPECT_EQ(log.text().find("train split's data"), std::string::npos) << log.text();
}

TEST(ImageFolder, ValidationUsesTrainClasses) {
  hg::test::TempDir tmp;
  Tree tree(tmp);
  fs::create_directories(tmp.path() / "val/dog");
  hg::data::write_png(tmp / "val/dog/v.png", hg::test::random_image(3, 3, 3, 11));
  ImageFolder train(tmp.path().string(), "train");
  ImageFolderOptions opts;
  opts.classes = train.classes();
  ImageFolder val(tmp.path().string(), "val", opts);
  EXPECT_EQ(val.num_classes(), 3);
  EXPECT_EQ(val.get(0).label, 2);  // its own sorted order would say 0
  EXPECT_EQ(ImageFolder(tmp.path().string(), "val", opts).size(), 1);
  fs::create_directories(tmp.path() / "val/zebra");
  hg::data::write_png(tmp / "val/zebra/z.png", hg::test::random_image(3, 3, 3, 12));
  std::string msg = error_of([&] { ImageFolder(tmp.path().string(), "val", opts); });
  EXPECT_NE(msg.find("zebra"), std::string::npos) << msg;
}

// Class indices are timm's (its folder reader sorts by natural_key): numbers by value, text
// without case. Byte-wise (torchvision's) gave "1", "10", "2" and "Zebra" before "cat", so a model
// moved to timm and evaluated on the same folders had its labels permuted.
TEST(ImageFolder, ClassesTakeTimmsNaturalOrder) {
  hg::test::TempDir tmp;
  for (const char* c : {"10", "2", "1", "Zebra", "cat", "b2c", "b10c", "b02", "a", "A"}) {
    fs::create_directories(tmp.path() / "train" / c);
    hg::data::write_png(tmp / (std::string("train/") + c + "/i.png"),
                        hg::test::random_image(3, 3, 3, 21));
  }
  // python3: sorted(names, key=natural_key), the equal keys "a" / "A" byte-wise
  const std::vector<std::string> timm = {"1",   "2",   "10",   "A",   "a",
                                         "b02", "b2c", "b10c", "cat", "Zebra"};
  EXPECT_EQ(hg::data::subfolders((tmp.path() / "train").string()), timm);
  ImageFolder train(tmp.path().string(), "train");
  EXPECT_EQ(train.classes(), timm);
  EXPECT_TRUE(hg::data::natural_less("x9", "x10"));
  EXPECT_TRUE(hg::data::natural_less("x010", "x11"));  // 10 < 11, not '0' < '1' by length
  EXPECT_FALSE(hg::data::natural_less("x10", "x9"));
  EXPECT_TRUE(hg::data::natural_less("img", "img0"));  // a prefix first
  EXPECT_FALSE(hg::data::natural_less("same", "same"));
}

// A val class folder that the train split lacks, with no images in it, stopped the run ("not one
// of the given classes"); timm numbers the classes of the images it finds, so an empty folder is
// nothing there. It is passed over, said; one with images stays an error.
TEST(ImageFolder, AnEmptyValClassFolderTheTrainSplitLacksIsPassedOver) {
  hg::test::TempDir tmp;
  Tree tree(tmp);  // train: bird, cat, dog
  fs::create_directories(tmp.path() / "val/cat");
  hg::data::write_png(tmp / "val/cat/v.png", hg::test::random_image(3, 3, 3, 13));
  fs::create_directories(tmp.path() / "val/zebra");
  ImageFolderOptions opts;
  opts.classes = ImageFolder(tmp.path().string(), "train").classes();
  const ImageFolder val(tmp.path().string(), "val", opts);
  EXPECT_EQ(val.size(), 1);
  EXPECT_EQ(val.classes(), opts.classes);
  hg::data::write_png(tmp / "val/zebra/z.png", hg::test::random_image(3, 3, 3, 14));
  const std::string msg = error_of([&] { ImageFolder(tmp.path().string(), "val", opts); });
  EXPECT_NE(msg.find("class folder 'zebra'"), std::string::npos) << msg;
}

// A val class folder that differs from a train class only in case ('Cat' against 'cat') was
// called "not one of the given classes" with no hint: the message names the train class it
// almost matches (class names are case-sensitive, as in torchvision's ImageFolder).
TEST(ImageFolder, AValClassDifferingOnlyInCaseIsNamed) {
  hg::test::TempDir tmp;
  Tree tree(tmp);  // train: bird, cat, dog
  fs::create_directories(tmp.path() / "val/Cat");
  hg::data::write_png(tmp / "val/Cat/v.png", hg::test::random_image(3, 3, 3, 13));
  ImageFolderOptions opts;
  opts.classes = ImageFolder(tmp.path().string(), "train").classes();
  const std::string msg = error_of([&] { ImageFolder(tmp.path().string(), "val", opts); });
  EXPECT_NE(msg.find("'Cat'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("differs only in case from the train class 'cat'"), std::string::npos) << msg;
  // a class with no near match gets no such hint
  fs::remove_all(tmp.path() / "val/Cat");
  fs::create_directories(tmp.path() / "val/zebra");
  hg::data::write_png(tmp / "val/zebra/z.png", hg::test::random_image(3, 3, 3, 14));
  const std::string other = error_of([&] { ImageFolder(tmp.path().string(), "val", opts); });
  EXPECT_EQ(other.find("differs only in case"), std::string::npos) << other;
  EXPECT_NE(other.find("; the train classes: 'bird', 'cat', 'dog'"), std::string::npos) << other;
  // names that print alike: a trailing space, and an accent in another Unicode form
  fs::remove_all(tmp.path() / "val/zebra");
  fs::create_directories(tmp.path() / "val/dog ");
  hg::data::write_png(tmp / "val/dog /d.png", hg::test::random_image(3, 3, 3, 15));
  const std::string spaced = error_of([&] { ImageFolder(tmp.path().string(), "val", opts); });
  EXPECT_NE(spaced.find("starts or ends with a space; did you mean 'dog'?"), std::string::npos)
      << spaced;
  fs::remove_all(tmp.path() / "val/dog ");
  fs::create_directories(tmp.path() / "val/cafe\xcc\x81");  // NFD: e + combining acute
  hg::data::write_png(tmp / "val/cafe\xcc\x81/c.png", hg::test::random_image(3, 3, 3, 16));
  const std::string accent = error_of([&] { ImageFolder(tmp.path().string(), "val", opts); });
  EXPECT_NE(accent.find("another Unicode form (NFC or NFD)"), std::string::npos) << accent;
}

TEST(ImageFolder, FashionMnistExportReadsBack) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(dir)) GTEST_SKIP() << dir << " missing";
  hg::test::TempDir tmp;
  hg::data::IdxDataset idx(dir, "test");
  const auto names = hg::data::numbered_class_dirs(hg::data::fashion_mnist_classes());
  EXPECT_EQ(names.front(), "0_t-shirt_top");
  EXPECT_EQ(hg::data::export_image_folder(idx, tmp.path().string(), "val", names, 2), 20);
  ImageFolderOptions opts;
  opts.channels = 1;
  ImageFolder back(tmp.path().string(), "val", opts);
  ASSERT_EQ(back.size(), 20);
  EXPECT_EQ(back.classes(), names);
  for (int64_t i = 0; i < back.size(); ++i) {
    const int64_t index = std::stoll(fs::path(back.path(i)).stem().string());
    hg::data::Sample a = back.get(i), b = idx.get(index);
    EXPECT_EQ(a.label, b.label);
    EXPECT_EQ(a.image.pixels, b.image.pixels);
  }
}

// export_image_folder writes its images with several writers at once (their fsyncs overlap; see
// data/export.cpp): every image of every batch arrives, each file holds exactly the bytes one
// write_png of it gives and decodes to the dataset's pixels, the per-class limit still keeps the
// first images of each class in index order, and no temporary file is left.
TEST(ImageFolder, ExportWritesEveryImageAsOneWriterWould) {
  hg::test::TempDir tmp;
  // 700 images: several batches of writers and a short last one
  const hg::data::SyntheticDataset ds(700, 4, 9, 7, 3, 5);
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  for (const int64_t limit : {0, 60}) {
    SCOPED_TRACE(limit);
    const std::string split = "split" + std::to_string(limit);
    const int64_t n = hg::data::export_image_folder(ds, tmp.path().string(), split, names, limit);
    std::vector<int64_t> per_class(names.size(), 0);
    int64_t expected = 0;
    for (int64_t i = 0; i < ds.size(); ++i) {
      const hg::data::Sample s = ds.get(i);
      char name[32];
      std::snprintf(name, sizeof name, "%05lld.png", static_cast<long long>(i));
      const fs::path file = tmp.path() / split / names[static_cast<size_t>(s.label)] / name;
      const bool kept = limit == 0 || per_class[static_cast<size_t>(s.label)]++ < limit;
      ASSERT_EQ(fs::exists(file), kept) << file;
      if (!kept) continue;
      ++expected;
      const fs::path one = tmp.path() / "one.png";
      hg::data::write_png(one.string(), s.image);
      ASSERT_EQ(hg::test::read_bytes(file.string()), hg::test::read_bytes(one.string())) << file;
      ASSERT_EQ(hg::data::read_image(file.string(), 3).pixels, s.image.pixels) << file;
    }
    EXPECT_EQ(n, expected);
    EXPECT_EQ(expected, limit == 0 ? 700 : 240);
    int64_t files = 0;
    for (const auto& e : fs::recursive_directory_iterator(tmp.path() / split)) {
      files += e.is_regular_file();
      EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
    }
    EXPECT_EQ(files, expected);
  }
}

// A file that cannot be written, among many being written at once, is an error naming it (not a
// crash, not silence), and no temporary file is left.
TEST(ImageFolder, ExportReportsAFileItCannotWrite) {
  hg::test::TempDir tmp;
  const hg::data::SyntheticDataset ds(300, 2, 4, 4, 1, 6);
  const std::vector<std::string> names = {"a", "b"};
  // a folder where image 123 goes: its rename fails
  const fs::path blocked =
      tmp.path() / "train" / names[static_cast<size_t>(ds.get(123).label)] / "00123.png";
  fs::create_directories(blocked / "x");
  const std::string msg =
      error_of([&] { hg::data::export_image_folder(ds, tmp.path().string(), "train", names); });
  EXPECT_NE(msg.find("cannot write '" + blocked.string() + "'"), std::string::npos) << msg;
  for (const auto& e : fs::recursive_directory_iterator(tmp.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}
