// The GPU transform (data/gpu_augment.h, kernels/cuda/crop_resize.cu) against the CPU transform
// (Transform::apply_plan): random images of 1 and 3 channels, train plans (random-resized crops,
// flips) and eval plans (fractional center-crop boxes; crop_pct > 1: padded with the zero pixel),
// up- and downscaling, regions decoded from a JPEG at reduced scale; f32 within 1e-4, bf16 within
// its rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "core/random.h"
#include "data/gpu_augment.h"
#include "data/image_region.h"
#include "data/jpeg_encode.h"
#include "gpu/gpu_util.h"

using namespace hg;
using namespace hg::data;

namespace {

Image random_image(int64_t h, int64_t w, int64_t c, uint64_t seed) {
  Generator g(seed);
  Image img{h, w, c, std::vector<uint8_t>(static_cast<size_t>(h * w * c))};
  for (auto& p : img.pixels) p = static_cast<uint8_t>(g.randint(256));
  return img;
}

// Max |gpu - cpu| over the batch, the CPU side from Transform::apply_plan per image.
double max_error(const std::vector<Image>& imgs, const std::vector<CropPlan>& plans, const Transform& t, DType dtype) {
  std::vector<const Image*> ptrs;
  for (const auto& im : imgs) ptrs.push_back(&im);
  const Tensor gpu = augment_on_gpu(ptrs, plans, t, dtype).to(Device::cpu).to(DType::f32);
  const std::vector<float> g = gpu.to_vector<float>();
  const int64_t per = t.output_numel();
  EXPECT_EQ(static_cast<int64_t>(g.size()), per * static_cast<int64_t>(imgs.size()));
  std::vector<float> cpu(static_cast<size_t>(per));
  double worst = 0;
  for (size_t i = 0; i < imgs.size(); ++i) {
    t.apply_plan(imgs[i], plans[i], cpu.data());
    for (int64_t k = 0; k < per; ++k) {
      const double d = std::abs(double(g[i * size_t(per) + size_t(k)]) - cpu[size_t(k)]);
      EXPECT_FALSE(std::isnan(d)) << i << " " << k;
      worst = std::max(worst, d);
    }
  }
  return worst;
}

}  // namespace

TEST(GpuCropResize, MatchesCpuTransform) {
  HG_REQUIRE_GPU();
  for (int64_t C : {3, 1}) {
    for (const auto& [train, crop_pct] :
         std::vector<std::pair<bool, double>>{{true, 0.875}, {false, 0.875}, {false, 1.3}}) {
      TransformOptions o;
      o.train = train;
      o.crop_pct = crop_pct;
      o.img_size = train ? 56 : 48;
      o.mean.resize(size_t(C), 0.45);
      o.std.resize(size_t(C), 0.23);
      const Transform t(o);
      std::vector<Image> imgs;
      std::vector<CropPlan> plans;
      Generator g(100 + C + train);
      for (int i = 0; i < 12; ++i) {
        // From 20 px (upscaling) to 400 px (7x downscaling), odd sizes.
        const int64_t h = 20 + g.randint(380), w = 20 + g.randint(380);
        imgs.push_back(random_image(h, w, C, 7 * i + C));
        plans.push_back(t.plan(h, w, g));
      }
      SCOPED_TRACE(testing::Message()
                   << "C " << C << (train ? " train" : " eval") << " crop_pct " << crop_pct);
      EXPECT_LT(max_error(imgs, plans, t, DType::f32), 1e-4);
      // bf16 keeps 8 significant bits: |v| <= ~2.7 here, so an error under 2^-8 * 2.7 ~ 0.011.
      EXPECT_LT(max_error(imgs, plans, t, DType::bf16), 0.0125);
    }
  }
}

TEST(GpuCropResize, RegionsDecodedFromJpegAtReducedScale) {
  HG_REQUIRE_GPU();
  Image src{300, 420, 3, std::vector<uint8_t>(300 * 420 * 3)};
  for (int64_t k = 0; k < 300 * 420 * 3; ++k)
    src.pixels[size_t(k)] = static_cast<uint8_t>(128 + 100 * std::sin(k * 0.013) * std::cos(k * 0.0007));
  const auto bytes = encode_jpeg(src, {});
  const std::string path = testing::TempDir() + "/hg_crop_resize.jpg";
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_TRUE(f);
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
  }
  TransformOptions o;
  o.train = true;
  o.img_size = 32;
  const Transform t(o);
  std::vector<Image> imgs;
  std::vector<CropPlan> plans;
  int reduced = 0;
  for (uint64_t seed = 0; seed < 16; ++seed) {
    CropPlan plan;
    const ImageRegion r = read_image_region(path, 3, [&](int64_t h, int64_t w) {
      Generator g(seed);
      plan = t.plan(h, w, g);
      return CropRequest{plan.box, o.img_size, o.img_size};
    });
    plan.box = r.box;
    reduced += r.info.scale > 1;
    imgs.push_back(r.image);
    plans.push_back(plan);
  }
  EXPECT_GT(reduced, 0);
  EXPECT_LT(max_error(imgs, plans, t, DType::f32), 1e-4);
  std::remove(path.c_str());
}

// resample_on_gpu into a poisoned, guarded output (tests/gpu/gpu_util.h): every filter (bilinear,
// bicubic, nearest), 1 and 3 channels, several output sides, f32 and bf16, padded eval crops
// (crop_pct > 1, flipped too) among the random ones; every element written, none past the end, and
// equal to the CPU transform (f32 within 1e-4, bf16 within its rounding).
TEST(GpuCropResize, PoisonedOutputEveryFilterAndDtype) {
  HG_REQUIRE_GPU();
  for (int64_t C : {3, 1})
    for (int64_t S : {1, 17, 64})
      for (DType dtype : {DType::f32, DType::bf16}) {
        TransformOptions o;
        o.train = true;
        o.img_size = S;
        o.interpolation = "random";
        o.mean.assign(size_t(C), 0.5);
        o.std.assign(size_t(C), 0.25);
        const Transform t(o);
        TransformOptions padded = o;  // eval at crop_pct 1.4: every side of a square image padded
        padded.train = false;
        padded.interpolation = "bilinear";
        padded.crop_pct = S > 1 ? 1.4 : 1.0;  // at S = 1, floor(1 / 1.4) would be no pixel
        const Transform te(padded);
        std::vector<Image> imgs;
        std::vector<CropPlan> plans;
        std::vector<kernels::CropResizeItem> items;
        std::vector<uint8_t> packed;
        Generator g(31 * S + C);
        for (int i = 0; i < 9; ++i) {
          const int64_t h = 3 + g.randint(300), w = 3 + g.randint(300);
          imgs.push_back(random_image(h, w, C, uint64_t(100 * S + i)));
          CropPlan p = S > 1 && i % 2 == 1 ? te.plan(h, w, g) : t.plan(h, w, g);
          if (i % 4 == 3) p.flip = true;  // a padded crop mirrored: its left and right padding swap
          p.interp = static_cast<Interp>(i % 3);  // nearest, bilinear, bicubic in turn
          plans.push_back(p);
          items.push_back(crop_item(p, h, w, static_cast<int64_t>(packed.size())));
          packed.insert(packed.end(), imgs.back().pixels.begin(), imgs.back().pixels.end());
        }
        SCOPED_TRACE(testing::Message() << "C " << C << " S " << S << " " << dtype_name(dtype));
        const Tensor pixels = Tensor::from_bytes({int64_t(packed.size())}, DType::u8, packed.data(), Device::cuda);
        test::Guarded out({int64_t(items.size()), S, S, C}, dtype);
        resample_on_gpu(pixels, items, t, out.tensor());
        EXPECT_TRUE(out.guard_intact());
        const std::vector<float> gpu = out.tensor().to(Device::cpu).to(DType::f32).to_vector<float>();
        std::vector<float> cpu(size_t(t.output_numel()));
        double worst = 0;
        for (size_t i = 0; i < imgs.size(); ++i) {
          t.apply_plan(imgs[i], plans[i], cpu.data());
          for (size_t k = 0; k < cpu.size(); ++k) {
            const float v = gpu[i * cpu.size() + k];
            ASSERT_FALSE(std::isnan(v)) << "unwritten element " << k << " of item " << i;
            worst = std::max(worst, double(std::abs(v - cpu[k])));
          }
        }
        // bf16 keeps 8 significant bits: values here reach ~|2| (bicubic overshoot a little more).
        EXPECT_LT(worst, dtype == DType::f32 ? 1e-4 : 0.02);
      }
}

TEST(GpuCropResize, RejectsItemsOutsideTheirPixels) {
  HG_REQUIRE_GPU();
  TransformOptions o;
  o.img_size = 8;
  const Transform t(o);
  const Tensor pixels = Tensor::zeros({10 * 10 * 3}, DType::u8, Device::cuda);
  Tensor out = Tensor::empty({1, 8, 8, 3}, DType::f32, Device::cuda);
  CropPlan p;
  p.box = CropBox{0, 0, 10, 10};
  auto it = crop_item(p, 10, 11, 0);  // one column more than the buffer holds
  EXPECT_THROW(resample_on_gpu(pixels, {it}, t, out), Error);
  it = crop_item(p, 10, 10, 0);
  it.interp = 7;
  EXPECT_THROW(resample_on_gpu(pixels, {it}, t, out), Error);
  it = crop_item(p, 10, 10, 0);
  it.pad_left = 5;
  it.pad_right = 4;  // 9 columns of padding on an output of 8
  EXPECT_THROW(resample_on_gpu(pixels, {it}, t, out), Error);
  Tensor wrong = Tensor::empty({1, 8, 8, 1}, DType::f32, Device::cuda);
  EXPECT_THROW(resample_on_gpu(pixels, {crop_item(p, 10, 10, 0)}, t, wrong), Error);
}
