// JPEG decoding with libjpeg-turbo: baseline, progressive, grayscale and CMYK files (written here with
// libjpeg-turbo's encoder), truncated, corrupt and non-JPEG files with a .jpg name; region decodes
// against whole-image decodes at every DCT scale; crops from reduced-scale decodes against full-size.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <sstream>
#include <thread>

#include "captured_log.h"
#include "core/random.h"
#include "data/image_region.h"
#include "data/jpeg_decode.h"
#include "data/jpeg_encode.h"
#include "data/transforms.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace hg::data;

namespace {

// Smooth colour fields with some edges: JPEG keeps them within a few levels, and they are not symmetric.
Image photo_like(int64_t h, int64_t w, int64_t c, uint64_t seed) {
  hg::Generator g(seed);
  const double a = g.uniform(5, 9), b = g.uniform(7, 13), ph = g.uniform(0, 6);
  Image img{h, w, c, std::vector<uint8_t>(static_cast<size_t>(h * w * c))};
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k) {
        double v = 120 + 50 * std::sin(x / a + ph + k) * std::cos(y / b - k) + 0.25 * (x - y) + 30.0 * (x > w / 3);
        img.pixels[static_cast<size_t>((y * w + x) * c + k)] = static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
      }
  return img;
}

std::string to_string(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

double mean_abs_diff(const Image& a, const Image& b) {
  EXPECT_EQ(a.height, b.height);
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.channels, b.channels);
  if (a.pixels.size() != b.pixels.size()) return 1e9;
  double s = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) s += std::abs(int(a.pixels[i]) - int(b.pixels[i]));
  return s / static_cast<double>(a.pixels.size());
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const CorruptImage& e) {
    return e.what();
  }
  return "(no CorruptImage thrown)";
}

// One file of each kind in a temp folder.
struct Files {
  hg::test::TempDir dir;
  Image rgb = photo_like(67, 91, 3, 1), gray = photo_like(45, 38, 1, 2);
  std::string baseline = dir / "baseline.jpg", progressive = dir / "progressive.jpg", grayf = dir / "gray.jpg",
              cmyk = dir / "cmyk.jpg", q444 = dir / "q444.jpg";
  Files() {
    JpegEncodeOptions o;
    o.quality = 95;
    hg::test::write_bytes(baseline, to_string(encode_jpeg(rgb, o)));
    o.chroma_subsampling = 1;
    hg::test::write_bytes(q444, to_string(encode_jpeg(rgb, o)));
    o.chroma_subsampling = 2;
    o.progressive = true;
    hg::test::write_bytes(progressive, to_string(encode_jpeg(rgb, o)));
    o.progressive = false;
    hg::test::write_bytes(grayf, to_string(encode_jpeg(gray, o)));
    o.cmyk = true;
    hg::test::write_bytes(cmyk, to_string(encode_jpeg(rgb, o)));
  }
  std::vector<std::string> all() const { return {baseline, q444, progressive, grayf, cmyk}; }
};

JpegHeader header_of(const std::string& path) {
  const auto bytes = read_file_bytes(path);
  return read_jpeg_header(bytes.data(), bytes.size(), path);
}

}  // namespace

TEST(Jpeg, BaselineProgressiveAndSubsamplingDecodeClose) {
  Files f;
  for (const auto& path : {f.baseline, f.q444, f.progressive}) {
    SCOPED_TRACE(path);
    const JpegHeader h = header_of(path);
    EXPECT_EQ(h.width, 91);
    EXPECT_EQ(h.height, 67);
    EXPECT_EQ(h.components, 3);
    EXPECT_EQ(h.progressive, path == f.progressive);
    const Image img = read_image(path, 3);
    EXPECT_LT(mean_abs_diff(img, f.rgb), 3.0);  // quality 95
    // stb_image decodes the same file to within its own IDCT / upsampling rounding.
    EXPECT_LT(mean_abs_diff(img, read_image(path, 3, JpegDecoder::stb)), 1.5);
  }
  // Progressive and baseline of the same image and quality decode alike.
  EXPECT_LT(mean_abs_diff(read_image(f.progressive, 3), read_image(f.baseline, 3)), 0.5);
}

TEST(Jpeg, GrayscaleFile) {
  Files f;
  EXPECT_EQ(header_of(f.grayf).components, 1);
  const Image g1 = read_image(f.grayf, 1), g3 = read_image(f.grayf, 3);
  EXPECT_LT(mean_abs_diff(g1, f.gray), 2.0);
  ASSERT_EQ(g3.channels, 3);
  for (int64_t p = 0; p < g1.height * g1.width; ++p)  // gray is replicated exactly
    for (int c = 0; c < 3; ++c) ASSERT_EQ(g3.pixels[size_t(p * 3 + c)], g1.pixels[size_t(p)]) << p;
}

TEST(Jpeg, ColourFileAsOneChannelIsLuma) {
  Files f;
  const Image rgb = read_image(f.q444, 3), y = read_image(f.q444, 1);
  double err = 0;
  for (int64_t p = 0; p < y.height * y.width; ++p) {
    const uint8_t* q = &rgb.pixels[size_t(p * 3)];
    err += std::abs(0.299 * q[0] + 0.587 * q[1] + 0.114 * q[2] - y.pixels[size_t(p)]);
  }
  EXPECT_LT(err / static_cast<double>(y.height * y.width), 1.0);  // Y from the YCbCr data vs luma of RGB
}

TEST(Jpeg, CmykFileBecomesRgb) {
  Files f;
  const JpegHeader h = header_of(f.cmyk);
  EXPECT_EQ(h.components, 4);
  EXPECT_TRUE(h.adobe);
  const Image img = read_image(f.cmyk, 3);
  EXPECT_LT(mean_abs_diff(img, f.rgb), 4.0);  // quality 95 on four full-resolution channels
  const Image y = read_image(f.cmyk, 1);
  for (int64_t p = 0; p < 50; ++p) {
    const uint8_t* q = &img.pixels[size_t(p * 3)];
    EXPECT_NEAR(y.pixels[size_t(p)], (299 * q[0] + 587 * q[1] + 114 * q[2] + 500) / 1000, 0) << p;
  }
}

// A CMYK JPEG without its Adobe (APP14) marker is read as PIL reads every CMYK JPEG, 255 - ink:
// read as plain ink it came out nearly black.
TEST(Jpeg, CmykFileWithoutAdobeMarkerIsReadAsPilReadsIt) {
  Files f;
  std::string bytes = hg::test::read_bytes(f.cmyk);
  const size_t app14 = bytes.find("\xFF\xEE");
  ASSERT_NE(app14, std::string::npos);
  const size_t length =
      (static_cast<uint8_t>(bytes[app14 + 2]) << 8) | static_cast<uint8_t>(bytes[app14 + 3]);
  bytes.erase(app14, 2 + length);
  const std::string bare = f.dir / "cmyk_no_adobe.jpg";
  hg::test::write_bytes(bare, bytes);
  const JpegHeader h = header_of(bare);
  EXPECT_EQ(h.components, 4);
  EXPECT_FALSE(h.adobe);
  const Image img = read_image(bare, 3), with = read_image(f.cmyk, 3);
  EXPECT_EQ(img.pixels, with.pixels);
  EXPECT_LT(mean_abs_diff(img, f.rgb), 4.0);
}

TEST(Jpeg, TruncatedFileIsAnErrorWhateverTheRegion) {
  Files f;
  for (const auto& src : {f.baseline, f.progressive}) {
    const std::string bytes = hg::test::read_bytes(src);
    const std::string cut = f.dir / ("cut_" + fs::path(src).filename().string());
    hg::test::write_bytes(cut, bytes.substr(0, bytes.size() * 6 / 10));
    SCOPED_TRACE(cut);
    const std::string msg = error_of([&] { read_image(cut, 3); });
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
    EXPECT_NE(msg.find(cut), std::string::npos) << msg;
    // A region in the intact top rows: the decoder still reads on and finds the truncation.
    const CropChooser top = [](int64_t, int64_t) { return CropRequest{CropBox{0, 0, 16, 16}, 8, 8}; };
    const std::string region_msg = error_of([&] { read_image_region(cut, 3, top); });
    EXPECT_NE(region_msg.find("truncated"), std::string::npos) << region_msg;
    // The header alone is still readable.
    EXPECT_EQ(header_of(cut).width, 91);
  }
}

// A region decode skips the rows below it only when the file holds its end-of-image marker near
// its end (padding may follow it), and otherwise reads on to find a truncation. Whatever follows
// the marker (nothing, zeros, bytes of garbage, FF fill, a long tail), the region equals the top of
// the whole decode; the marker cut off, or the data cut and zero-padded, is "truncated" for the
// whole image and for a region in its intact top rows alike.
TEST(Jpeg, EndMarkerPaddingAndTruncationAlikeForAnyRegion) {
  Files f;
  const std::string good = hg::test::read_bytes(f.baseline);
  const auto decode = [](const std::string& bytes, PixelRect want) {
    return decode_jpeg(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "t.jpg", 3, 1,
                       want);
  };
  const Image whole = decode(good, {}).image;
  const PixelRect top{0, 0, whole.width, 16};  // whole rows: no column-crop edge
  const std::vector<uint8_t> top_pixels(whole.pixels.begin(),
                                        whole.pixels.begin() + 16 * whole.width * 3);
  for (const size_t pad : {0, 1, 20, 31, 32, 33, 40, 62, 63, 64, 65, 100, 1000})
    for (const char fill : {'\0', '\x37', '\xFF'}) {
      SCOPED_TRACE(testing::Message() << pad << " bytes of " << int(uint8_t(fill)));
      const std::string padded = good + std::string(pad, fill);
      EXPECT_EQ(decode(padded, {}).image.pixels, whole.pixels);
      const JpegRegion r = decode(padded, top);
      EXPECT_EQ(r.y0, 0);
      EXPECT_EQ(r.image.pixels, top_pixels);
    }
  const std::string no_marker = good.substr(0, good.size() - 2);
  const std::string cut_padded = good.substr(0, good.size() * 6 / 10) + std::string(100, '\0');
  for (const std::string& bad : {no_marker, cut_padded})
    for (const PixelRect want : {PixelRect{}, top}) {
      SCOPED_TRACE(testing::Message() << bad.size() << " bytes, " << want.y1 << " rows");
      const std::string msg = error_of([&] { decode(bad, want); });
      EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
    }
}

TEST(Jpeg, CorruptAndNonJpegFilesNamedJpg) {
  Files f;
  // Text with a .jpg name: named, with its first bytes.
  const std::string text = f.dir / "text.jpg";
  hg::test::write_bytes(text, "hello, I am not an image");
  std::string msg = error_of([&] { read_image(text, 3); });
  EXPECT_NE(msg.find(text), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a JPEG, PNG, BMP, PPM or PGM file"), std::string::npos) << msg;
  EXPECT_NE(msg.find("68 65 6c 6c 6f"), std::string::npos) << msg;  // "hello"
  // A PNG with a .jpg name decodes as the PNG it is (sniffed, not trusted by name).
  const std::string png = f.dir / "really_a_png.jpg";
  write_png(png, f.rgb);
  const Image p = read_image(png, 3);
  EXPECT_EQ(p.pixels, f.rgb.pixels);
  const CropChooser whole = [](int64_t h, int64_t w) { return CropRequest{CropBox{0, 0, double(w), double(h)}, h, w}; };
  const ImageRegion r = read_image_region(png, 3, whole);
  EXPECT_EQ(r.info.format, ImageFormat::png);
  EXPECT_EQ(r.info.key(), "png stb");
  EXPECT_EQ(r.image.pixels, f.rgb.pixels);
  // A JPEG start marker followed by garbage: libjpeg-turbo's reason, and the file.
  const std::string bad = f.dir / "garbage.jpg";
  hg::test::write_bytes(bad, std::string("\xFF\xD8\xFF\xE0") + std::string(200, '\x37'));
  msg = error_of([&] { read_image(bad, 3); });
  EXPECT_NE(msg.find(bad), std::string::npos) << msg;
  EXPECT_NE(msg.find("libjpeg-turbo"), std::string::npos) << msg;
  // Empty file.
  const std::string empty = f.dir / "empty.jpg";
  hg::test::write_bytes(empty, "");
  EXPECT_NE(error_of([&] { read_image(empty, 3); }).find("empty file"), std::string::npos);
  // Missing file.
  EXPECT_NE(error_of([&] { read_image(f.dir / "missing.jpg", 3); }).find("cannot open"), std::string::npos);
}

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size()))
    ++n;
  return n;
}

// Corrupt data that libjpeg-turbo decodes anyway (as PIL does: gray where data is missing) is
// logged as a warning naming the file and libjpeg's message, once per file however many times and
// in however many threads it is decoded; libjpeg's own handler printed it to stderr without the
// file (ours printed nothing). A file cut before its end-of-image marker stays an error naming the
// file.
TEST(Jpeg, CorruptDataWarningNamesTheFileOnce) {
  Files f;
  const std::string good = hg::test::read_bytes(f.baseline),
                    prog = hg::test::read_bytes(f.progressive);
  // the last scan's entropy-coded data cut in half, the end-of-image marker kept: "premature end of
  // data segment" (a cut elsewhere in a progressive file can fall in a table: a fatal error)
  const auto cut_last_scan = [](const std::string& b) {
    const size_t last_sos = b.rfind("\xFF\xDA");
    return b.substr(0, last_sos + (b.size() - last_sos) / 2) + "\xFF\xD9";
  };
  const std::string premature = f.dir / "premature.jpg",
                    premature_prog = f.dir / "premature_prog.jpg";
  hg::test::write_bytes(premature, cut_last_scan(good));
  hg::test::write_bytes(premature_prog, cut_last_scan(prog));
  // two bytes of garbage before the start-of-scan marker: "extraneous bytes before marker 0xda"
  const size_t sos = good.find("\xFF\xDA");
  ASSERT_NE(sos, std::string::npos);
  const std::string extraneous = f.dir / "extraneous.jpg";
  hg::test::write_bytes(extraneous, good.substr(0, sos) + "\x12\x34" + good.substr(sos));
  const std::string cut = f.dir / "cut.jpg";
  hg::test::write_bytes(cut, good.substr(0, good.size() * 6 / 10));

  hg::test::CapturedLog log;
  for (int pass = 0; pass < 2; ++pass)  // a second epoch: no second warning
    for (JpegDecoder d : {JpegDecoder::turbo, JpegDecoder::turbo_full}) {
      EXPECT_EQ(read_image(premature, 3, d).width, 91);
      EXPECT_EQ(read_image(premature_prog, 1, d).height, 67);
      EXPECT_EQ(read_image(extraneous, 3, d).width, 91);
    }
  EXPECT_EQ(read_image(f.baseline, 3).width, 91);
  const std::string msg = error_of([&] { read_image(cut, 3); });
  EXPECT_NE(msg.find(cut), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  const std::string text = log.text();
  for (const std::string& p : {premature, premature_prog, extraneous}) {
    SCOPED_TRACE(p);
    EXPECT_EQ(count_of(text, "'" + p + "'"), 1u) << text;
  }
  EXPECT_EQ(count_of(text, "premature end of data segment"), 2u) << text;
  EXPECT_EQ(count_of(text, "extraneous bytes before marker 0xda"), 1u) << text;
  EXPECT_NE(text.find("[warning]"), std::string::npos) << text;
  EXPECT_EQ(text.find(f.baseline), std::string::npos) << text;  // an intact file: nothing
  EXPECT_EQ(text.find(cut), std::string::npos) << text;         // an error, not also a warning

  // Loader workers decode side by side: each file is still named once, with its own message.
  std::vector<std::string> copies;
  for (int i = 0; i < 8; ++i) {
    copies.push_back(f.dir / ("copy" + std::to_string(i) + ".jpg"));
    hg::test::write_bytes(copies.back(), hg::test::read_bytes(i % 2 ? premature : extraneous));
  }
  hg::test::CapturedLog threads_log;
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t)
    workers.emplace_back([&] {
      for (int rep = 0; rep < 5; ++rep)
        for (const std::string& c : copies) read_image(c, 3);
    });
  for (std::thread& w : workers) w.join();
  const std::string t2 = threads_log.text();
  for (size_t i = 0; i < copies.size(); ++i) {
    SCOPED_TRACE(copies[i]);
    EXPECT_EQ(count_of(t2, "'" + copies[i] + "'"), 1u) << t2;
    const size_t line = t2.find("'" + copies[i] + "'");
    if (line == std::string::npos) continue;
    const std::string rest = t2.substr(line, t2.find('\n', line) - line);
    EXPECT_NE(rest.find(i % 2 ? "premature end of data segment" : "extraneous bytes"),
              std::string::npos)
        << rest;
  }
}

TEST(Jpeg, RegionDecodeEqualsWholeDecodeAtEveryScale) {
  Files f;
  // A larger image so that 1/8 still has several blocks.
  const Image big = photo_like(203, 261, 3, 9);
  const std::string path = f.dir / "big.jpg";
  hg::test::write_bytes(path, to_string(encode_jpeg(big, {})));
  std::vector<std::string> paths = f.all();
  paths.push_back(path);
  hg::Generator g(5);
  for (const auto& p : paths) {
    const auto bytes = read_file_bytes(p);
    for (int s : {1, 2, 4, 8}) {
      for (int channels : {1, 3}) {
        const JpegRegion whole = decode_jpeg(bytes.data(), bytes.size(), p, channels, s);
        const JpegHeader h = read_jpeg_header(bytes.data(), bytes.size(), p);
        ASSERT_EQ(whole.image.width, jpeg_scaled_size(h.width, s));
        ASSERT_EQ(whole.image.height, jpeg_scaled_size(h.height, s));
        for (int trial = 0; trial < 6; ++trial) {
          const int64_t W = whole.image.width, H = whole.image.height;
          PixelRect want;
          want.x0 = g.randint(W);
          want.y0 = g.randint(H);
          want.x1 = want.x0 + 1 + g.randint(W - want.x0);
          want.y1 = want.y0 + 1 + g.randint(H - want.y0);
          const JpegRegion r = decode_jpeg(bytes.data(), bytes.size(), p, channels, s, want);
          SCOPED_TRACE(testing::Message() << p << " scale 1/" << s << " channels " << channels << " want x "
                                          << want.x0 << ".." << want.x1 << " y " << want.y0 << ".." << want.y1);
          ASSERT_LE(r.x0, want.x0);
          ASSERT_EQ(r.y0, want.y0);
          ASSERT_GE(r.x0 + r.image.width, want.x1);
          ASSERT_EQ(r.image.height, want.y1 - want.y0);
          // Inside the rectangle, away from a cropped left/right edge by 2 px, the pixels are equal
          // (at an edge libjpeg's fancy upsampling lacks a neighbour: that is read_image_region's margin).
          int64_t worst = 0;
          for (int64_t y = want.y0; y < want.y1; ++y)
            for (int64_t x = want.x0; x < want.x1; ++x) {
              if ((r.x0 > 0 && x < r.x0 + 2) || (r.x0 + r.image.width < W && x >= r.x0 + r.image.width - 2)) continue;
              for (int c = 0; c < channels; ++c) {
                const int a = r.image.at(y - r.y0, x - r.x0, c), b = whole.image.at(y, x, c);
                worst = std::max<int64_t>(worst, std::abs(a - b));
              }
            }
          ASSERT_EQ(worst, 0);
        }
      }
    }
  }
}

TEST(Jpeg, ScaleChoice) {
  EXPECT_EQ(jpeg_scale_for({CropBox{0, 0, 447, 500}, 224, 224}), 1);
  EXPECT_EQ(jpeg_scale_for({CropBox{0, 0, 448, 500}, 224, 224}), 2);
  EXPECT_EQ(jpeg_scale_for({CropBox{0, 0, 900, 1000}, 224, 224}), 4);
  EXPECT_EQ(jpeg_scale_for({CropBox{0, 0, 500, 500}, 64, 64}), 4);
  EXPECT_EQ(jpeg_scale_for({CropBox{0, 0, 512, 512}, 64, 64}), 8);
  EXPECT_EQ(jpeg_scale_for({CropBox{0, 0, 100, 100}, 224, 224}), 1);  // upscaling crop
}

// The crop a transform resamples from a region (at reduced scale, or not) against the same crop of the
// whole full-size decode: equal at scale 1, within the DCT-scaling tolerance below it.
TEST(Jpeg, RegionCropsMatchFullDecodeCrops) {
  hg::test::TempDir dir;
  const Image big = photo_like(330, 410, 3, 4);
  const std::string path = dir / "big.jpg";
  JpegEncodeOptions o;
  o.quality = 92;
  hg::test::write_bytes(path, to_string(encode_jpeg(big, o)));
  TransformOptions to;
  to.train = true;
  to.img_size = 90;  // boxes of 104 to 367 px: decoded at 1/1 below 180, at 1/2 above
  const Transform t(to);
  const int64_t n = t.output_numel();
  int scales_seen[9] = {};
  for (uint64_t seed = 0; seed < 40; ++seed) {
    CropPlan plan;
    const CropChooser choose = [&](int64_t h, int64_t w) {
      hg::Generator g(seed);
      plan = t.plan(h, w, g);
      return CropRequest{plan.box, to.img_size, to.img_size};
    };
    const ImageRegion full = read_image_region(path, 3, choose, JpegDecoder::turbo_full);
    const CropPlan full_plan = plan;
    const ImageRegion part = read_image_region(path, 3, choose, JpegDecoder::turbo);
    EXPECT_EQ(full.box.w, plan.box.w);
    std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    t.apply_plan(full.image, full_plan, a.data());
    CropPlan part_plan = plan;
    part_plan.box = part.box;
    t.apply_plan(part.image, part_plan, b.data());
    double mad = 0, worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = std::abs(a[size_t(i)] - b[size_t(i)]) * 0.226 * 255;  // back to 8-bit levels
      mad += d;
      worst = std::max(worst, d);
    }
    mad /= static_cast<double>(n);
    ++scales_seen[part.info.scale];
    SCOPED_TRACE(testing::Message() << "seed " << seed << " scale 1/" << part.info.scale << " box " << plan.box.w
                                    << "x" << plan.box.h);
    if (part.info.scale == 1) {
      EXPECT_LT(worst, 1e-3);  // the same pixels, the same filter: equal up to float summation
    } else {
      // DCT scaling averages s x s blocks before our triangle filter: a slightly softer result.
      // Tolerance: mean 2.5 levels, any pixel 16 levels (8-bit), on this strongly textured image.
      EXPECT_LT(mad, 2.5);
      EXPECT_LT(worst, 16.0);
    }
  }
  EXPECT_GT(scales_seen[1], 0);
  EXPECT_GT(scales_seen[2] + scales_seen[4] + scales_seen[8], 0);
}

// The segment reader both segment walks share (the probe's frame size, jpeg_reaches_end): fill
// bytes before the marker, markers that stand alone, a length that counts itself, and nothing for
// what is no segment header.
TEST(Jpeg, ASegmentHeaderIsReadWithItsFillBytesAndLength) {
  const auto at = [](const std::string& b, size_t i) {
    return jpeg_segment_at(reinterpret_cast<const uint8_t*>(b.data()), b.size(), i);
  };
  const std::string app1("\xff\xff\xe1\x00\x10", 5);  // a fill byte, APP1 of length 16
  const auto s = at("xx" + app1, 2);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->marker, 0xE1);
  EXPECT_EQ(s->payload, 7u);
  EXPECT_EQ(s->end, 21u);  // past the data: cut short, for the caller to judge
  const auto rst = at(std::string("\xff\xd3\x00", 3), 0);
  ASSERT_TRUE(rst.has_value());
  EXPECT_EQ(rst->marker, 0xD3);
  EXPECT_EQ(rst->end, 2u);                                  // no length
  EXPECT_FALSE(at("x" + app1, 0));                          // no FF
  EXPECT_FALSE(at(std::string("\xff\xff", 2), 0));          // only fill bytes
  EXPECT_FALSE(at(std::string("\xff\xe1\x00", 3), 0));      // the length cut
  EXPECT_FALSE(at(std::string("\xff\xe1\x00\x01", 4), 0));  // a length below 2
}

// The evaluation crop with crop_pct > 1 reaches past the image on every side (it is padded): the
// region decoded for it (the whole image, maybe at reduced scale) gives the whole decode's output.
TEST(Jpeg, PaddedEvalCropsOfARegionMatchTheFullDecode) {
  hg::test::TempDir dir;
  const Image big = photo_like(330, 410, 3, 5);
  const std::string path = dir / "big.jpg";
  hg::test::write_bytes(path, to_string(encode_jpeg(big, JpegEncodeOptions{})));
  // 200 / 1.1: resized 181x224, rows padded, read at 1/1; 90 / 1.25: 72x89, every side padded, a
  // box of 412 px read at reduced scale
  for (const auto& [size, crop_pct] :
       std::vector<std::pair<int64_t, double>>{{200, 1.1}, {90, 1.25}}) {
    SCOPED_TRACE(testing::Message() << "img_size " << size << " crop_pct " << crop_pct);
    TransformOptions to;
    to.img_size = size;
    to.crop_pct = crop_pct;
    const Transform t(to);
    const int64_t n = t.output_numel();
    CropPlan plan;
    const CropChooser choose = [&](int64_t h, int64_t w) {
      hg::Generator g(0);
      plan = t.plan(h, w, g);
      return CropRequest{plan.box, size, size};
    };
    const ImageRegion full = read_image_region(path, 3, choose, JpegDecoder::turbo_full);
    const CropPlan full_plan = plan;
    const ImageRegion part = read_image_region(path, 3, choose, JpegDecoder::turbo);
    const bool reduced = size == 90;
    EXPECT_EQ(part.info.scale > 1, reduced) << part.info.scale;
    CropPlan part_plan = plan;
    part_plan.box = part.box;
    std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    t.apply_plan(full.image, full_plan, a.data());
    t.apply_plan(part.image, part_plan, b.data());
    double mad = 0, worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(std::isfinite(b[size_t(i)])) << i;
      const double d = std::abs(a[size_t(i)] - b[size_t(i)]) * 0.226 * 255;  // back to 8-bit levels
      mad += d;
      worst = std::max(worst, d);
    }
    mad /= static_cast<double>(n);
    if (!reduced) {
      EXPECT_LT(worst, 1e-3);
    } else {  // RegionCropsMatchFullDecodeCrops's DCT-scaling tolerance
      EXPECT_LT(mad, 2.5);
      EXPECT_LT(worst, 16.0);
    }
    // the first row is padding: the zero pixel normalised, in both
    for (int64_t c = 0; c < 3; ++c) {
      EXPECT_EQ(a[size_t(c)], static_cast<float>(-to.mean[size_t(c)] / to.std[size_t(c)]));
      EXPECT_EQ(b[size_t(c)], a[size_t(c)]);
    }
  }
}
