// The ImageNet recipe of the WTConv paper (ConvNeXt's) in configs/convnext_tiny.yaml and
// configs/wtconvnext_tiny.yaml: every key of the recipe has its value, every key of the recipe
// reaches the part of the pipeline that honours it, and no config key is accepted and then read
// nowhere.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/from_config.h"
#include "train/config.h"

namespace fs = std::filesystem;
using hg::train::Config;

namespace {
Config shipped(const char* name) {
  return hg::train::load_config(std::string(HAARGRAD_SOURCE_DIR) + "/configs/" + name);
}
}  // namespace

TEST(Recipe, ImageNetConfigsCarryTheWholeRecipe) {
  for (const char* name : {"convnext_tiny.yaml", "wtconvnext_tiny.yaml"}) {
    SCOPED_TRACE(name);
    const Config c = shipped(name);
    EXPECT_EQ(c.epochs, 300);
    EXPECT_EQ(c.warmup_epochs, 20);
    EXPECT_EQ(c.batch_size * c.grad_accum_steps, 4096);  // effective batch
    EXPECT_EQ(c.opt, "adamw");
    EXPECT_DOUBLE_EQ(c.lr, 4e-3);
    EXPECT_DOUBLE_EQ(c.weight_decay, 0.05);
    EXPECT_EQ(c.sched, "cosine");
    EXPECT_TRUE(c.sched_on_updates);  // stepped per update
    EXPECT_DOUBLE_EQ(c.drop_path, 0.1);
    EXPECT_DOUBLE_EQ(c.smoothing, 0.1);
    EXPECT_EQ(c.aa, "rand-m9-mstd0.5-inc1");
    EXPECT_DOUBLE_EQ(c.reprob, 0.25);
    EXPECT_EQ(c.remode, "pixel");
    EXPECT_EQ(c.recount, 1);
    EXPECT_DOUBLE_EQ(c.mixup, 0.8);
    EXPECT_DOUBLE_EQ(c.cutmix, 1.0);
    EXPECT_TRUE(c.cutmix_minmax.empty());
    EXPECT_DOUBLE_EQ(c.mixup_prob, 1.0);
    EXPECT_DOUBLE_EQ(c.mixup_switch_prob, 0.5);
    EXPECT_EQ(c.mixup_mode, "batch");
    EXPECT_EQ(c.train_interpolation, "bicubic");
    EXPECT_TRUE(c.model_ema);
    EXPECT_DOUBLE_EQ(c.model_ema_decay, 0.9999);
    EXPECT_DOUBLE_EQ(c.crop_pct, 0.875);
    EXPECT_EQ(c.img_size, 224);
    EXPECT_EQ(c.num_classes, 1000);
  }
  EXPECT_EQ(shipped("wtconvnext_tiny.yaml").model, "wtconvnext_tiny");
  EXPECT_EQ(shipped("convnext_tiny.yaml").model, "convnext_tiny");
}

TEST(Recipe, RecipeKeysReachTheDataPipeline) {
  const Config c = shipped("wtconvnext_tiny.yaml");
  const hg::data::TransformOptions t = hg::data::make_transform_options(c, true);
  EXPECT_EQ(t.auto_augment, c.aa);
  EXPECT_EQ(t.interpolation, c.train_interpolation);
  EXPECT_EQ(t.random_erasing.probability, c.reprob);
  EXPECT_EQ(t.random_erasing.mode, c.remode);
  EXPECT_EQ(t.random_erasing.max_count, c.recount);
  EXPECT_EQ(t.scale[0], c.scale[0]);
  EXPECT_EQ(t.crop_pct, c.crop_pct);
  hg::data::Transform built(t);  // the spec parses and the transform builds
  const hg::data::LoaderOptions l = hg::data::make_loader_options(c, true);
  ASSERT_NE(l.mixup, nullptr);
  const hg::data::MixupOptions& m = l.mixup->options();
  EXPECT_EQ(m.mixup_alpha, c.mixup);
  EXPECT_EQ(m.cutmix_alpha, c.cutmix);
  EXPECT_EQ(m.prob, c.mixup_prob);
  EXPECT_EQ(m.switch_prob, c.mixup_switch_prob);
  EXPECT_EQ(m.mode, c.mixup_mode);
  EXPECT_EQ(m.label_smoothing, c.smoothing);  // smoothing goes into the mixed targets
  EXPECT_EQ(m.num_classes, c.num_classes);
  EXPECT_EQ(hg::data::make_loader_options(c, false).mixup, nullptr);  // never for evaluation
}

// A key that is parsed but read nowhere is a promise the program does not keep. Every key must be
// read as a member of the config (cfg.key / c.key / config.key) somewhere in the sources outside
// the config table itself.
TEST(Recipe, EveryConfigKeyIsReadSomewhere) {
  std::string sources;
  for (const char* dir : {"app", "core", "data", "kernels", "layers", "models", "train"})
    for (const auto& e : fs::recursive_directory_iterator(fs::path(HAARGRAD_SOURCE_DIR) / dir)) {
      const std::string ext = e.path().extension().string();
      const std::string rel = fs::relative(e.path(), HAARGRAD_SOURCE_DIR).string();
      if (rel == "train/config.h") continue;  // config.cpp reads keys into the model config
      if (ext != ".cpp" && ext != ".h" && ext != ".cu" && ext != ".cuh") continue;
      std::ifstream f(e.path());
      std::ostringstream os;
      os << f.rdbuf();
      sources += os.str();
    }
  ASSERT_GT(sources.size(), 100000u);
  std::vector<std::string> unread;
  auto ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  auto read_as_member = [&](const std::string& key) {  // (cfg|c|config).key, whole words
    for (const std::string var : {"cfg.", "c.", "config."})
      for (size_t at = sources.find(var + key); at != std::string::npos;
           at = sources.find(var + key, at + 1)) {
        const size_t end = at + var.size() + key.size();
        if ((at == 0 || !ident(sources[at - 1])) && (end == sources.size() || !ident(sources[end])))
          return true;
      }
    return false;
  };
  for (const std::string& key : hg::train::config_keys())
    if (!read_as_member(key)) unread.push_back(key);
  EXPECT_TRUE(unread.empty()) << "config keys read nowhere: " << ::testing::PrintToString(unread);
}
