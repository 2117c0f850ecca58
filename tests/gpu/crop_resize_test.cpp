// The GPU transform (data/gpu_augment.h, kernels/cuda/crop_resize.cu) against the CPU transform
// (Transform::apply_plan): random images of 1 and 3 channels, train plans (random-resized crops,
// flips) and eval plans (fractional center-crop boxes), up- and downscaling, regions decoded from a
// JPEG at reduced scale; f32 within 1e-4, bf16 within its rounding.
#include <gtest/gtest.h>

#include <cmath>

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
    for (bool train : {true, false}) {
      TransformOptions o;
      o.train = train;
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
      SCOPED_TRACE(testing::Message() << "C " << C << (train ? " train" : " eval"));
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
