// The recipe's augmentations inside the data pipeline: the train Transform with RandAugment,
// ColorJitter, random erasing and the crop filter; the loader's batch mixup with soft targets,
// deterministic for any number of workers and across a resume; the config keys that drive them.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "data/from_config.h"
#include "data/loader.h"
#include "data/synthetic.h"
#include "data/transforms.h"
#include "temp_dir.h"

using namespace hg::data;

namespace {
TransformOptions whole_image(int64_t size) {  // the crop is the whole (square) image: no resampling
  TransformOptions o;
  o.img_size = size;
  o.train = true;
  o.scale = {1.0, 1.0};
  o.ratio = {1.0, 1.0};
  o.hflip = 0.0;
  return o;
}
std::vector<float> run(const Transform& t, const Image& img, uint64_t seed) {
  std::vector<float> out(size_t(t.output_numel()), NAN);
  hg::Generator gen(seed);
  t.apply(img, gen, out.data());
  return out;
}
}  // namespace

TEST(AugmentPipeline, EightBitStageWithoutOpsKeepsThePixels) {
  const Image img = hg::test::random_image(12, 12, 3, 1);
  TransformOptions o = whole_image(12);
  o.auto_augment = "rand-n0";  // the 8-bit path, no op: pixels are the image's, normalised
  const std::vector<float> out = run(Transform(o), img, 3);
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_NEAR(out[i], (img.pixels[i] / 255.0 - o.mean[i % 3]) / o.std[i % 3], 1e-5) << i;
}

TEST(AugmentPipeline, RandAugmentOrJitterChangeTheImageDeterministically) {
  const Image img = hg::test::random_image(16, 16, 3, 2);
  const std::vector<float> plain = run(Transform(whole_image(16)), img, 0);
  for (const char* which : {"aa", "jitter"}) {
    TransformOptions o = whole_image(16);
    if (std::string(which) == "aa") {
      o.auto_augment = "rand-m9-mstd0.5-inc1";
    } else {
      o.color_jitter = {0.4};
    }
    const Transform t(o);
    int changed = 0;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      const std::vector<float> a = run(t, img, seed);
      EXPECT_EQ(a, run(t, img, seed)) << which;  // same seed, same pixels
      changed += a != plain;
    }
    EXPECT_GT(changed, 12) << which;
  }
  TransformOptions both = whole_image(16);  // timm: no color jitter when RandAugment is on
  both.auto_augment = "rand-n0";
  both.color_jitter = {0.4};
  EXPECT_EQ(run(Transform(both), img, 5), run(Transform(whole_image(16)), img, 5));
}

TEST(AugmentPipeline, RandomErasingAfterNormalisation) {
  const Image img = hg::test::random_image(20, 20, 3, 3, 200, 255);  // normalised values all > 0
  TransformOptions o = whole_image(20);
  o.random_erasing.probability = 1.0;
  o.random_erasing.mode = "const";
  const std::vector<float> out = run(Transform(o), img, 7);
  const auto zeros = std::count(out.begin(), out.end(), 0.0f);
  EXPECT_GT(zeros, 0);
  EXPECT_EQ(zeros % 3, 0);  // whole pixels
  EXPECT_LE(zeros, 20 * 20 * 3 / 2);
}

TEST(AugmentPipeline, TrainInterpolation) {
  Image img{4, 4, 1, {0, 40, 80, 120, 20, 60, 100, 140, 40, 80, 120, 160, 60, 100, 140, 255}};
  TransformOptions o = whole_image(10);  // upscale 4 -> 10
  o.mean = {0.0};
  o.std = {1.0};
  o.interpolation = "bilinear";
  const auto bl = run(Transform(o), img, 1);
  o.interpolation = "bicubic";
  const auto bc = run(Transform(o), img, 1);
  EXPECT_NE(bl, bc);
  o.interpolation = "random";
  std::set<std::vector<float>> seen;
  for (uint64_t s = 0; s < 16; ++s) seen.insert(run(Transform(o), img, s));
  EXPECT_EQ(seen, (std::set<std::vector<float>>{bl, bc}));  // one of the two per image
  o.interpolation = "lanczos";
  EXPECT_THROW(Transform{o}, hg::Error);
}

TEST(AugmentPipeline, LoaderMixesBatchesWithSoftTargets) {
  hg::train::Config cfg;
  cfg.dataset = "synthetic";
  cfg.synthetic_size = 32;
  cfg.num_classes = 5;
  cfg.img_size = 8;
  cfg.batch_size = 8;
  cfg.mixup = 0.8;
  cfg.cutmix = 1.0;
  cfg.mixup_mode = "elem";
  cfg.smoothing = 0.1;
  cfg.aa = "rand-m9-mstd0.5-inc1";
  cfg.reprob = 0.25;
  cfg.device = "cpu";
  const Datasets ds = make_datasets(cfg);
  auto batches = [&](int64_t workers, int64_t epoch, int64_t start) {
    hg::train::Config c = cfg;
    c.workers = workers;
    auto dl = make_loader(c, true, ds.train);
    dl->start_epoch(epoch, start);
    std::vector<Batch> out;
    for (Batch b; dl->next(b);) out.push_back(b);
    return out;
  };
  const auto a = batches(0, 1, 0), b = batches(3, 1, 0), resumed = batches(2, 1, 2);
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(resumed.size(), 2u);
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_TRUE(a[k].targets.defined());
    ASSERT_EQ(a[k].targets.shape(), (hg::Shape{8, 5}));
    EXPECT_EQ(a[k].images.to_vector<float>(), b[k].images.to_vector<float>()) << k;
    EXPECT_EQ(a[k].targets.to_vector<float>(), b[k].targets.to_vector<float>()) << k;
    if (k >= 2) {
      EXPECT_EQ(a[k].targets.to_vector<float>(), resumed[k - 2].targets.to_vector<float>()) << k;
    }
    const std::vector<float> t = a[k].targets.to_vector<float>();
    for (int64_t i = 0; i < 8; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < 5; ++j) sum += t[size_t(i * 5 + j)];
      EXPECT_NEAR(sum, 1.0, 1e-6);
    }
  }
  // mixup_off_epoch: from that epoch on, smoothed one-hot targets and unmixed images
  cfg.mixup_off_epoch = 1;
  const auto off = batches(0, 1, 0);
  const std::vector<float> t = off[0].targets.to_vector<float>();
  const std::vector<int64_t> y = off[0].labels.to_vector<int64_t>();
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 5; ++j)
      EXPECT_FLOAT_EQ(t[size_t(i * 5 + j)], j == y[size_t(i)] ? 0.92f : 0.02f);
  // eval loaders never mix
  auto val = make_loader(cfg, false, ds.val);
  val->start_epoch(0);
  Batch vb;
  ASSERT_TRUE(val->next(vb));
  EXPECT_FALSE(vb.targets.defined());
}

// Random erasing comes after mixup / cutmix, as in timm (its prefetcher erases the mixed batch):
// with every image erased by a constant (0 after normalisation) and every pair blended (mixup
// only, lam strictly inside (0, 1)), each image still holds a box of exact zeros, which mixing
// after erasing would have blended with its partner's pixels.
TEST(AugmentPipeline, RandomErasingAfterMixup) {
  hg::train::Config cfg;
  cfg.dataset = "synthetic";
  cfg.synthetic_size = 16;
  cfg.num_classes = 4;
  cfg.img_size = 16;
  cfg.batch_size = 8;
  cfg.mixup = 1.0;
  cfg.mixup_mode = "elem";
  cfg.reprob = 1.0;
  cfg.remode = "const";
  cfg.device = "cpu";
  const Datasets ds = make_datasets(cfg);
  auto dl = make_loader(cfg, true, ds.train);
  dl->start_epoch(0);
  Batch b;
  ASSERT_TRUE(dl->next(b));
  const std::vector<float> px = b.images.to_vector<float>();
  const int64_t per = 16 * 16 * 3;
  for (int64_t i = 0; i < 8; ++i) {
    int64_t zeros = 0;
    for (int64_t k = 0; k < per; ++k) zeros += px[size_t(i * per + k)] == 0.0f;
    // the smallest box: 2% of 256 pixels, 3 channels
    EXPECT_GE(zeros, 15) << "image " << i << ": its erased box was mixed";
  }
}

TEST(AugmentPipeline, ConfigKeysReachTheTransform) {
  hg::train::Config cfg;
  cfg.aa = "rand-m9-mstd0.5-inc1";
  cfg.reprob = 0.25;
  cfg.remode = "rand";
  cfg.recount = 2;
  cfg.color_jitter = {0.3, 0.2, 0.1, 0.05};
  cfg.train_interpolation = "bicubic";
  const TransformOptions t = make_transform_options(cfg, true);
  EXPECT_EQ(t.auto_augment, cfg.aa);
  EXPECT_EQ(t.random_erasing.probability, 0.25);
  EXPECT_EQ(t.random_erasing.mode, "rand");
  EXPECT_EQ(t.random_erasing.max_count, 2);
  EXPECT_EQ(t.color_jitter, cfg.color_jitter);
  EXPECT_EQ(t.interpolation, "bicubic");
  {  // timm: an empty train_interpolation is the evaluation's interpolation
    hg::train::Config same = cfg;
    same.train_interpolation = "";
    same.interpolation = "nearest";
    EXPECT_EQ(make_transform_options(same, true).interpolation, "nearest");
  }
  const TransformOptions e = make_transform_options(cfg, false);  // eval: none of it
  EXPECT_EQ(e.auto_augment, "");
  EXPECT_EQ(e.random_erasing.probability, 0.0);
  cfg.cutmix_minmax = {0.2, 0.8};
  cfg.mixup_prob = 0.7;
  cfg.mixup_switch_prob = 0.3;
  cfg.mixup_mode = "pair";
  const MixupOptions m = mixup_options(cfg);
  EXPECT_TRUE(mixup_active(cfg));
  EXPECT_EQ(m.cutmix_minmax->at(1), 0.8);
  EXPECT_EQ(m.prob, 0.7);
  EXPECT_EQ(m.switch_prob, 0.3);
  EXPECT_EQ(m.mode, "pair");
  EXPECT_EQ(m.num_classes, cfg.num_classes);
  EXPECT_EQ(m.label_smoothing, cfg.smoothing);
}
