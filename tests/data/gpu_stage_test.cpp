// The CPU side of the GPU decode / transform path: the config keys (decode, gpu_augment) and their
// errors, ImageFolder::get_encoded (which files stay compressed for nvJPEG), the end-marker test, the
// crop's reach rectangle, the bench-data rows, and the loader's refusals (mixup, CPU-only 8-bit ops,
// decode without gpu_augment, a build or machine without a GPU).
#include <gtest/gtest.h>

#include <filesystem>

#include "data/from_config.h"
#include "data/gpu_augment.h"
#include "data/gpu_batch.h"
#include "data/image_folder.h"
#include "data/jpeg_decode.h"
#include "data/jpeg_encode.h"
#include "data/loader.h"
#include "data/loader_bench.h"
#include "data/synthetic.h"
#include "temp_dir.h"
#include "train/config.h"

namespace fs = std::filesystem;
using namespace hg;
using namespace hg::data;

namespace {

Image ramp(int64_t h, int64_t w) {
  Image img{h, w, 3, std::vector<uint8_t>(static_cast<size_t>(h * w * 3))};
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<uint8_t>((i * 7) % 251);
  return img;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(GpuStage, DecodeBackendNames) {
  EXPECT_EQ(parse_decode_backend("cpu"), DecodeBackend::cpu);
  EXPECT_EQ(parse_decode_backend("nvjpeg"), DecodeBackend::nvjpeg);
  EXPECT_EQ(parse_decode_backend("nvjpeg_gpu"), DecodeBackend::nvjpeg_gpu);
  for (DecodeBackend d : {DecodeBackend::cpu, DecodeBackend::nvjpeg, DecodeBackend::nvjpeg_gpu})
    EXPECT_EQ(parse_decode_backend(decode_backend_name(d)), d);
  const std::string m = message_of([] { parse_decode_backend("nvjpg"); });
  EXPECT_NE(m.find("nvjpg"), std::string::npos) << m;
  EXPECT_NE(m.find("decode"), std::string::npos) << m;
}

TEST(GpuStage, ConfigKeysAndLoaderOptions) {
  train::Config cfg;
  EXPECT_FALSE(cfg.gpu_augment);  // defaults keep the CPU pipeline
  EXPECT_EQ(cfg.decode, "cpu");
  cfg.device = "cuda";
  LoaderOptions o = make_loader_options(cfg, true);
  EXPECT_FALSE(o.gpu_augment);
  train::apply_overrides(cfg, {"--decode", "nvjpeg", "--precision", "bf16"});
  o = make_loader_options(cfg, true);
  EXPECT_TRUE(o.gpu_augment);  // an nvJPEG decode implies the GPU transform
  EXPECT_EQ(o.decode, DecodeBackend::nvjpeg);
  EXPECT_EQ(o.gpu_dtype, DType::bf16);
  EXPECT_FALSE(o.pin_memory);
  train::apply_overrides(cfg, {"--decode", "cpu", "--gpu-augment", "true", "--precision", "tf32"});
  o = make_loader_options(cfg, false);
  EXPECT_TRUE(o.gpu_augment);
  EXPECT_EQ(o.decode, DecodeBackend::cpu);
  EXPECT_EQ(o.gpu_dtype, DType::f32);
  train::Config bad = cfg;
  EXPECT_THROW(train::apply_overrides(bad, {"--decode", "gpu"}), Error);
  cfg.device = "cpu";  // gpu_augment stays on
  const std::string m = message_of([&] { make_loader_options(cfg, true); });
  EXPECT_NE(m.find("device is cpu"), std::string::npos) << m;
}

TEST(GpuStage, EndMarker) {
  std::vector<uint8_t> b = encode_jpeg(ramp(40, 50), {});
  EXPECT_TRUE(jpeg_has_end_marker(b.data(), b.size()));
  std::vector<uint8_t> padded = b;
  padded.insert(padded.end(), 30, 0);  // some writers pad after the marker
  EXPECT_TRUE(jpeg_has_end_marker(padded.data(), padded.size()));
  EXPECT_FALSE(jpeg_has_end_marker(b.data(), b.size() - 2));
  EXPECT_FALSE(jpeg_has_end_marker(b.data(), b.size() / 2));
  EXPECT_FALSE(jpeg_has_end_marker(b.data(), 3));
}

TEST(GpuStage, CropReachRectHoldsTheBoxAndStaysInside) {
  const PixelRect r = crop_reach_rect(CropBox{10.5, 20, 100, 50}, 25, 25, 200, 300);
  EXPECT_LE(r.x0, 10);
  EXPECT_LE(r.y0, 20);
  EXPECT_GE(r.x1, 111);
  EXPECT_GE(r.y1, 70);
  EXPECT_GE(r.x0, 0);
  EXPECT_GE(r.y0, 0);
  const PixelRect edge = crop_reach_rect(CropBox{0, 0, 300, 200}, 224, 224, 200, 300);
  EXPECT_EQ(edge.x0, 0);
  EXPECT_EQ(edge.y0, 0);
  EXPECT_EQ(edge.x1, 300);
  EXPECT_EQ(edge.y1, 200);
}

TEST(GpuStage, ImageFolderHandsOverJpegBytesOnly) {
  test::TempDir t;
  fs::create_directories(t.path() / "train" / "a");
  const auto jpeg = encode_jpeg(ramp(60, 80), {});
  test::write_bytes(t / "train/a/0.jpg", std::string(jpeg.begin(), jpeg.end()));
  write_png(t / "train/a/1.jpg", ramp(30, 40));  // a PNG named .jpg
  test::write_bytes(t / "train/a/2.jpg", std::string(jpeg.begin(), jpeg.begin() + long(jpeg.size() * 2 / 3)));
  test::write_bytes(t / "train/a/3.jpg", std::string(jpeg.begin(), jpeg.end()));
  ImageFolderOptions fo;
  fo.probe = false;
  const ImageFolder folder(t.path().string(), "train", fo);
  ASSERT_EQ(folder.size(), 4);
  int64_t seen_h = 0, seen_w = 0;
  const CropChooser choose = [&](int64_t h, int64_t w) {
    seen_h = h;
    seen_w = w;
    return CropRequest{CropBox{1, 2, double(w) / 2, double(h) / 2}, 8, 8};
  };
  EncodedSample e = folder.get_encoded(0, choose);
  EXPECT_EQ(e.jpeg, jpeg);
  EXPECT_EQ(e.height, 60);
  EXPECT_EQ(e.width, 80);
  EXPECT_EQ(seen_h, 60);
  EXPECT_DOUBLE_EQ(e.request.box.w, 40);
  EXPECT_EQ(e.label, 0);
  EXPECT_NE(e.path.find("0.jpg"), std::string::npos);
  e = folder.get_encoded(1, choose);  // not a JPEG: decoded on the CPU
  EXPECT_TRUE(e.jpeg.empty());
  EXPECT_EQ(e.decoded.region.image.height, 30);
  EXPECT_EQ(e.decoded.region.info.format, ImageFormat::png);
  // Truncated: decoded on the CPU, where libjpeg-turbo finds it; skipped for the next file (a JPEG).
  e = folder.get_encoded(2, choose);
  EXPECT_EQ(e.jpeg, jpeg);
  EXPECT_NE(e.path.find("3.jpg"), std::string::npos);
  EXPECT_EQ(folder.corrupt_skipped(), 1);
  // With the stb decoder nothing is handed over undecoded.
  fo.jpeg = JpegDecoder::stb;
  const ImageFolder stb(t.path().string(), "train", fo);
  e = stb.get_encoded(0, choose);
  EXPECT_TRUE(e.jpeg.empty());
  EXPECT_EQ(e.decoded.region.image.width, 80);
}

// Which JPEGs the workers keep (gpu_takes): CMYK always, progressive ones when the hardware decoder
// runs (nvjpeg); those come back decoded, at reduced scale where the crop allows, like decode: cpu.
TEST(GpuStage, WorkersKeepTheJpegsTheGpuDecoderDoesNotTake) {
  test::TempDir t;
  fs::create_directories(t.path() / "train" / "a");
  const Image rgb = ramp(96, 128);
  JpegEncodeOptions prog, cmyk;
  prog.progressive = true;
  cmyk.cmyk = true;
  const auto base = encode_jpeg(rgb, {}), p = encode_jpeg(rgb, prog), c = encode_jpeg(rgb, cmyk);
  test::write_bytes(t / "train/a/0.jpg", std::string(base.begin(), base.end()));
  test::write_bytes(t / "train/a/1.jpg", std::string(p.begin(), p.end()));
  test::write_bytes(t / "train/a/2.jpg", std::string(c.begin(), c.end()));
  ImageFolderOptions fo;
  fo.probe = false;
  const ImageFolder folder(t.path().string(), "train", fo);
  ASSERT_EQ(folder.size(), 3);
  // A box a quarter of the image and an 8 px output: the CPU decode may use 1/2 scale (or less).
  const CropChooser choose = [](int64_t h, int64_t w) {
    return CropRequest{CropBox{0, 0, double(w) / 2, double(h) / 2}, 8, 8};
  };
  struct Want {
    DecodeBackend d;
    bool base, prog, cmyk;
  };
  for (const Want& w : {Want{DecodeBackend::nvjpeg, true, false, false},
                        Want{DecodeBackend::nvjpeg_gpu, true, true, false}}) {
    SCOPED_TRACE(decode_backend_name(w.d));
    const GpuTakes takes = gpu_takes(w.d);
    const bool want[3] = {w.base, w.prog, w.cmyk};
    for (int64_t i = 0; i < 3; ++i) {
      SCOPED_TRACE(i);
      const EncodedSample e = folder.get_encoded(i, choose, takes);
      EXPECT_EQ(!e.jpeg.empty(), want[i]);
      if (!want[i]) {
        EXPECT_TRUE(e.decoded.region.info.turbo);
        EXPECT_GT(e.decoded.region.info.scale, 1);  // the crop allowed a reduced-scale decode
        EXPECT_EQ(e.decoded.region.image.channels, 3);
      }
    }
  }
  // No predicate: every JPEG handed over.
  for (int64_t i = 0; i < 3; ++i) EXPECT_FALSE(folder.get_encoded(i, choose).jpeg.empty());
}

TEST(GpuStage, DefaultDatasetDecodesOnTheCpu) {
  const SyntheticDataset ds(4, 3, 16, 16, 3, 7);
  const EncodedSample e = ds.get_encoded(2, [](int64_t h, int64_t w) {
    return CropRequest{CropBox{0, 0, double(w), double(h)}, 8, 8};
  });
  EXPECT_TRUE(e.jpeg.empty());
  EXPECT_EQ(e.decoded.region.image.height, 16);
  EXPECT_EQ(e.label, ds.get(2).label);
}

TEST(GpuStage, BenchRows) {
  train::Config cfg;
  apply_bench_row(cfg, "turbo_full");
  EXPECT_EQ(cfg.jpeg_decoder, "turbo_full");
  EXPECT_FALSE(cfg.gpu_augment);
  apply_bench_row(cfg, "turbo_gpu_aug");
  EXPECT_EQ(cfg.jpeg_decoder, "turbo");
  EXPECT_EQ(cfg.decode, "cpu");
  EXPECT_TRUE(cfg.gpu_augment);
  apply_bench_row(cfg, "nvjpeg_gpu");
  EXPECT_EQ(cfg.decode, "nvjpeg_gpu");
  EXPECT_TRUE(cfg.gpu_augment);
  apply_bench_row(cfg, "stb");
  EXPECT_EQ(cfg.decode, "cpu");
  EXPECT_FALSE(cfg.gpu_augment);
  const std::string m = message_of([&] { apply_bench_row(cfg, "dali"); });
  EXPECT_NE(m.find("'dali'"), std::string::npos) << m;
}

TEST(GpuStage, CpuOnlyOpsAreRefusedByName) {
  TransformOptions t;
  t.train = true;
  EXPECT_NO_THROW(check_gpu_augment(t));
  t.auto_augment = "rand-m9-mstd0.5";
  EXPECT_NE(message_of([&] { check_gpu_augment(t); }).find("aa"), std::string::npos);
  t.auto_augment = "";
  t.color_jitter = {0.4};
  EXPECT_NE(message_of([&] { check_gpu_augment(t); }).find("color_jitter 0.4"), std::string::npos);
  t.color_jitter = {0, 0, 0, 0.1};  // hue alone
  EXPECT_NE(message_of([&] { check_gpu_augment(t); }).find("color_jitter [0, 0, 0, 0.1]"),
            std::string::npos);
  t.color_jitter = {0};
  t.random_erasing.probability = 0.25;
  EXPECT_NE(message_of([&] { check_gpu_augment(t); }).find("reprob"), std::string::npos);
}

TEST(GpuStage, LoaderRefusals) {
  auto ds = std::make_shared<SyntheticDataset>(8, 2, 16, 16, 3, 1);
  TransformOptions t;
  t.img_size = 8;
  LoaderOptions o;
  o.decode = DecodeBackend::nvjpeg;  // without gpu_augment
  std::string m = message_of([&] { DataLoader dl(ds, Transform(t), o); });
  EXPECT_NE(m.find("gpu_augment"), std::string::npos) << m;
  o.gpu_augment = true;
  o.decode = DecodeBackend::cpu;
  MixupOptions mo;
  mo.mixup_alpha = 0.8;
  mo.num_classes = 2;
  o.mixup = std::make_shared<const Mixup>(mo);
  m = message_of([&] { DataLoader dl(ds, Transform(t), o); });
  EXPECT_NE(m.find("mixup"), std::string::npos) << m;
  o.mixup = nullptr;
  // Without a GPU (or a CUDA build) the GPU transform says so; with one it builds.
  m = message_of([&] { DataLoader dl(ds, Transform(t), o); });
  if (!m.empty()) {
    EXPECT_NE(m.find("CUDA"), std::string::npos) << m;
    EXPECT_NE(m.find("set gpu_augment: false"), std::string::npos) << m;
    // decode: nvjpeg on such a machine named color_jitter (a CPU-only op) first, then "no usable
    // CUDA device" without the key that asked for the GPU: the device first, and the key
    t.color_jitter = {0.4};
    o.decode = DecodeBackend::nvjpeg;
    m = message_of([&] { DataLoader dl(ds, Transform(t), o); });
    EXPECT_NE(m.find("CUDA"), std::string::npos) << m;
    EXPECT_NE(m.find("set decode: cpu"), std::string::npos) << m;
  }
}
