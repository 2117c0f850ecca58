// nvJPEG decode (data/nvjpeg_decoder.h) against libjpeg-turbo's full-scale decode, per file kind:
// baseline 4:2:0 and 4:4:4, progressive, grayscale and Adobe CMYK files made by our encoder, plus the
// files scripts/make-jpeg-folder.py makes when python3 with numpy and Pillow is present. Prints the
// backend each kind gets (hardware / gpu / cpu-fallback) and checks the choices that are ours to make
// (CMYK on the CPU; the hardware takes baseline colour files when it is there, never progressive ones).
//
// Tolerance (8-bit levels, decoded pixels): nvJPEG's IDCT and chroma upsampling differ from
// libjpeg-turbo's accurate integer IDCT with fancy (triangle) upsampling. Luma-only output (gray
// files, or channels = 1) and 4:4:4: |diff| <= 3 everywhere. Subsampled colour: mean |diff| <= 4 and
// under 3% of values differing by more than 12 (where nvJPEG replicates chroma instead of
// interpolating, sharp colour edges move by a few tens of levels; see expect_close).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "data/image_folder.h"
#include "data/jpeg_decode.h"
#include "data/jpeg_encode.h"
#include "data/nvjpeg_decoder.h"
#include "gpu/gpu_util.h"

namespace fs = std::filesystem;
using namespace hg;
using namespace hg::data;

namespace {

struct JpegFile {
  std::string kind;
  std::vector<uint8_t> bytes;
  bool subsampled = true;  // colour with 4:2:0 chroma
};

// Photo-like content: smooth gradients, a few sharp coloured edges, texture.
Image test_image(int64_t h, int64_t w, uint64_t seed) {
  Image img{h, w, 3, std::vector<uint8_t>(static_cast<size_t>(h * w * 3))};
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t c = 0; c < 3; ++c) {
        double v = 128 + 60 * std::sin(0.031 * x + 0.7 * c + seed) * std::cos(0.023 * y - 0.3 * c) +
                   20 * std::sin(0.4 * x * (c + 1) + 0.17 * y);
        if ((x - w / 3) * (x - w / 3) + (y - h / 2) * (y - h / 2) < h * h / 16) v = uint64_t(c) == seed % 3 ? 220 : 40;
        img.pixels[static_cast<size_t>((y * w + x) * 3 + c)] = static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
      }
  return img;
}

std::vector<JpegFile> files_of_every_kind() {
  std::vector<JpegFile> f;
  const Image rgb = test_image(333, 457, 1);
  Image gray{333, 457, 1, std::vector<uint8_t>(333 * 457)};
  for (size_t i = 0; i < gray.pixels.size(); ++i) gray.pixels[i] = rgb.pixels[3 * i + 1];
  JpegEncodeOptions o;
  f.push_back({"baseline 4:2:0", encode_jpeg(rgb, o), true});
  o.chroma_subsampling = 1;
  f.push_back({"baseline 4:4:4", encode_jpeg(rgb, o), false});
  o.chroma_subsampling = 2;
  o.progressive = true;
  f.push_back({"progressive 4:2:0", encode_jpeg(rgb, o), true});
  o.progressive = false;
  f.push_back({"grayscale", encode_jpeg(gray, o), false});
  o.cmyk = true;
  f.push_back({"CMYK (Adobe)", encode_jpeg(rgb, o), false});
  // The benchmark folder's files, when the script can run here.
  const std::string py = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const fs::path dir = fs::temp_directory_path() / ("hg_nvjpeg_" + std::to_string(getpid()));
  if (std::system((py + " -c 'import numpy, PIL' 2>/dev/null").c_str()) == 0 &&
      std::system((py + " " HAARGRAD_SOURCE_DIR "/scripts/make-jpeg-folder.py --out " + dir.string() +
                   " --classes 2 --train-per-class 3 --val-per-class 1 --jobs 1 --seed 5 > /dev/null")
                      .c_str()) == 0) {
    const ImageFolder folder(dir.string(), "train");
    for (int64_t i = 0; i < folder.size(); ++i) {
      std::vector<uint8_t> b = read_file_bytes(folder.path(i));
      const JpegHeader h = read_jpeg_header(b.data(), b.size(), folder.path(i));
      const std::string kind = h.components == 4 ? "CMYK" : h.components == 1 ? "grayscale"
                               : h.progressive         ? "progressive"
                                                       : "baseline";
      f.push_back({"script " + kind, std::move(b), h.components == 3});
    }
  } else {
    std::cout << "[ note ] python3 with numpy + Pillow missing: scripts/make-jpeg-folder.py files not tested\n";
  }
  fs::remove_all(dir);
  return f;
}

// The decoded region of job 0 copied back to the host.
std::vector<uint8_t> region_of(const GpuImages& g, int64_t C) {
  const auto& it = g.items.at(0);
  std::vector<uint8_t> all(static_cast<size_t>(g.pixels.numel()));
  const Tensor host = g.pixels.to(Device::cpu);
  std::memcpy(all.data(), host.data_ptr(), all.size());
  return {all.begin() + it.offset, all.begin() + it.offset + int64_t(it.height) * it.width * C};
}

// Compares `got` (rect of the image) with the same rect of libjpeg-turbo's whole decode.
void expect_close(const std::vector<uint8_t>& got, const Image& ref, int64_t x0, int64_t y0, int64_t w, int64_t h,
                  bool luma_exact) {
  const int64_t C = ref.channels;
  ASSERT_EQ(static_cast<int64_t>(got.size()), w * h * C);
  double sum = 0;
  int64_t big = 0, worst = 0;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t c = 0; c < C; ++c) {
        const int64_t d = std::abs(int64_t(got[size_t((y * w + x) * C + c)]) - int64_t(ref.at(y + y0, x + x0, c)));
        sum += double(d);
        big += d > 12;
        worst = std::max(worst, d);
      }
  const double n = double(w * h * C);
  if (luma_exact) {
    EXPECT_LE(worst, 3) << "mean " << sum / n;
  } else {
    // Subsampled chroma: the JPEG standard leaves the chroma upsampling filter to the decoder;
    // libjpeg-turbo interpolates ("fancy upsampling"), nvJPEG does not. On the test image's
    // high-frequency colour texture and sharp colour edges they differ by up to ~55 levels at
    // those edges, ~3 levels on average (measured on the H200: mean 3.07, 1.4-1.8% of values off
    // by more than 12). A wrong colour conversion or a shifted chroma plane gives tens of levels
    // on average, which these bounds still catch.
    EXPECT_LE(sum / n, 4.0) << "worst " << worst;
    EXPECT_LE(double(big) / n, 0.03) << "worst " << worst << ", mean " << sum / n;
  }
}

}  // namespace

TEST(NvjpegDecode, MatchesLibjpegTurboPerFileKind) {
  HG_REQUIRE_GPU();
  if (!nvjpeg_built()) GTEST_SKIP() << "built without nvJPEG";
  const std::vector<JpegFile> files = files_of_every_kind();
  for (bool hardware : {true, false}) {
    for (int C : {3, 1}) {
      NvjpegDecoder dec(NvjpegOptions{C, hardware});
      for (const JpegFile& f : files) {
        const std::string path = f.kind + ".jpg";
        SCOPED_TRACE(testing::Message() << f.kind << ", " << C << " channels, hardware asked " << hardware);
        const JpegHeader h = read_jpeg_header(f.bytes.data(), f.bytes.size(), path);
        const NvjpegBackend b = dec.backend_for(f.bytes.data(), f.bytes.size(), path);
        std::cout << "[ backend ] " << (hardware ? "nvjpeg     " : "nvjpeg_gpu ") << C << " ch  " << f.kind << ": "
                  << nvjpeg_backend_name(b) << (dec.hardware() ? "" : " (no hardware decoder)") << "\n";
        if (h.components == 4) {
          EXPECT_EQ(b, NvjpegBackend::cpu);
        }
        if (h.progressive || !hardware || !dec.hardware()) {
          EXPECT_NE(b, NvjpegBackend::hardware);
        }
        if (dec.hardware() && !h.progressive && h.components == 3 && f.kind.rfind("baseline", 0) == 0) {
          EXPECT_EQ(b, NvjpegBackend::hardware);
        }
        const Image ref = decode_jpeg(f.bytes.data(), f.bytes.size(), path, C, 1).image;
        const bool luma_exact = C == 1 || !f.subsampled;
        // The whole image (a box covering it), then a crop: hardware decodes whole, the others the ROI.
        for (const CropBox box : {CropBox{0, 0, double(h.width), double(h.height)}, CropBox{101.5, 57, 180, 150}}) {
          JpegJob job{f.bytes.data(), f.bytes.size(), path, CropRequest{box, 64, 64}};
          const GpuImages g = dec.decode({job});
          ASSERT_EQ(g.items.size(), 1u);
          EXPECT_EQ(g.backends[0], b);
          const auto& it = g.items[0];
          const int64_t x0 = int64_t(std::llround(box.x - it.box_x)), y0 = int64_t(std::llround(box.y - it.box_y));
          EXPECT_DOUBLE_EQ(it.box_w, box.w);
          ASSERT_GE(x0, 0);
          ASSERT_GE(y0, 0);
          ASSERT_LE(x0 + it.width, h.width);
          ASSERT_LE(y0 + it.height, h.height);
          EXPECT_LE(x0, int64_t(box.x));  // the region holds the box
          EXPECT_GE(x0 + it.width, int64_t(std::ceil(box.x + box.w)));
          expect_close(region_of(g, C), ref, x0, y0, it.width, it.height, luma_exact);
        }
      }
    }
  }
}

TEST(NvjpegDecode, BatchOfMixedKindsKeepsOrder) {
  HG_REQUIRE_GPU();
  if (!nvjpeg_built()) GTEST_SKIP() << "built without nvJPEG";
  const std::vector<JpegFile> files = files_of_every_kind();
  NvjpegDecoder dec;
  std::vector<JpegJob> jobs;
  for (size_t i = 0; i < files.size(); ++i) {
    const JpegHeader h = read_jpeg_header(files[i].bytes.data(), files[i].bytes.size(), files[i].kind);
    jobs.push_back({files[i].bytes.data(), files[i].bytes.size(), files[i].kind,
                    CropRequest{CropBox{0, 0, double(h.width), double(h.height)}, 32, 32}});
  }
  const GpuImages g = dec.decode(jobs);
  ASSERT_EQ(g.items.size(), files.size());
  const Tensor host = g.pixels.to(Device::cpu);
  const auto* all = static_cast<const uint8_t*>(host.data_ptr());
  for (size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(files[i].kind);
    const Image ref = decode_jpeg(files[i].bytes.data(), files[i].bytes.size(), files[i].kind, 3, 1).image;
    ASSERT_EQ(g.items[i].height, ref.height);
    ASSERT_EQ(g.items[i].width, ref.width);
    const auto* p = all + g.items[i].offset;
    expect_close(std::vector<uint8_t>(p, p + ref.pixels.size()), ref, 0, 0, ref.width, ref.height, !files[i].subsampled);
  }
}

TEST(NvjpegDecode, CorruptFileIsNamed) {
  HG_REQUIRE_GPU();
  if (!nvjpeg_built()) GTEST_SKIP() << "built without nvJPEG";
  std::vector<uint8_t> bytes = encode_jpeg(test_image(120, 160, 2), {});
  // Damage the entropy-coded data past the header, keeping the end marker: GPU decoders may or may not
  // notice; libjpeg-turbo, the last resort, either decodes it (garbage pixels) or names the file.
  for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 64; ++i) bytes[i] = 0xFF;
  NvjpegDecoder dec;
  JpegJob job{bytes.data(), bytes.size(), "damaged.jpg", CropRequest{CropBox{0, 0, 160, 120}, 32, 32}};
  try {
    const GpuImages g = dec.decode({job});
    EXPECT_EQ(g.items.size(), 1u);
  } catch (const CorruptImage& e) {
    EXPECT_NE(std::string(e.what()).find("damaged.jpg"), std::string::npos) << e.what();
  }
}
