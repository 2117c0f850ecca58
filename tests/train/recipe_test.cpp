// The ImageNet recipe of the WTConv paper (ConvNeXt's) in configs/convnext_tiny.yaml and
// configs/wtconvnext_tiny.yaml: every key of the recipe has its value, every key of the recipe
// reaches the part of the pipeline that honours it, and no config key is accepted and then read
// nowhere.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
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
    EXPECT_DOUBLE_EQ(c.lr.value(), 4e-3);
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

// Every key with the file of the code path that consumes it: a key added to the table without
// an entry here, or an entry whose file no longer reads the key, fails. (Model keys reach the
// model through model_config_from in train/config.cpp.)
TEST(Recipe, EveryKeyHasTheCodePathThatConsumesIt) {
  const std::map<std::string, std::string> consumer = {
      {"model", "train/config.cpp"},
      {"num_classes", "data/from_config.cpp"},
      {"img_size", "data/from_config.cpp"},
      {"in_chans", "data/from_config.cpp"},
      {"depths", "train/config.cpp"},
      {"dims", "train/config.cpp"},
      {"patch_size", "train/config.cpp"},
      {"kernel_size", "train/config.cpp"},
      {"wt_levels", "train/config.cpp"},
      {"ls_init_value", "train/config.cpp"},
      {"wtconv_mode", "train/trainer.cpp"},
      {"drop_path", "train/config.cpp"},
      {"drop", "train/config.cpp"},
      {"data_dir", "data/from_config.cpp"},
      {"dataset", "data/from_config.cpp"},
      {"train_split", "data/from_config.cpp"},
      {"val_split", "data/from_config.cpp"},
      {"synthetic_size", "data/from_config.cpp"},
      {"workers", "data/from_config.cpp"},
      {"pin_mem", "data/from_config.cpp"},
      {"corrupt_images", "data/from_config.cpp"},
      {"jpeg_decoder", "data/from_config.cpp"},
      {"gpu_augment", "data/from_config.cpp"},
      {"decode", "data/from_config.cpp"},
      {"crop_pct", "data/from_config.cpp"},
      {"mean", "data/from_config.cpp"},
      {"std", "data/from_config.cpp"},
      {"hflip", "data/from_config.cpp"},
      {"scale", "data/from_config.cpp"},
      {"ratio", "data/from_config.cpp"},
      {"train_interpolation", "data/from_config.cpp"},
      {"interpolation", "data/from_config.cpp"},
      {"color_jitter", "data/from_config.cpp"},
      {"aa", "data/from_config.cpp"},
      {"reprob", "data/from_config.cpp"},
      {"remode", "data/from_config.cpp"},
      {"recount", "data/from_config.cpp"},
      {"mixup", "data/from_config.cpp"},
      {"cutmix", "data/from_config.cpp"},
      {"cutmix_minmax", "data/from_config.cpp"},
      {"mixup_prob", "data/from_config.cpp"},
      {"mixup_switch_prob", "data/from_config.cpp"},
      {"mixup_mode", "data/from_config.cpp"},
      {"mixup_off_epoch", "data/from_config.cpp"},
      {"batch_size", "data/from_config.cpp"},
      {"validation_batch_size", "data/from_config.cpp"},
      {"epochs", "train/trainer.cpp"},
      {"opt", "train/trainer.cpp"},
      {"lr", "train/config.cpp"},  // resolve_lr / peak_lr, which the trainer calls
      {"lr_base", "train/config.cpp"},
      {"lr_base_size", "train/config.cpp"},
      {"lr_base_scale", "train/config.cpp"},
      {"weight_decay", "train/trainer.cpp"},
      {"layer_decay", "train/trainer.cpp"},
      {"momentum", "train/trainer.cpp"},
      {"opt_eps", "train/optimizer.cpp"},
      {"opt_betas", "train/optimizer.cpp"},
      {"clip_grad", "train/trainer.cpp"},
      // schedule_segment, the keys of RunSchedule's parts (train/schedule.cpp)
      {"sched", "train/config.cpp"},
      {"warmup_epochs", "train/config.cpp"},
      {"warmup_lr", "train/config.cpp"},
      {"min_lr", "train/config.cpp"},
      {"sched_on_updates", "train/config.cpp"},
      {"decay_epochs", "train/config.cpp"},
      {"decay_milestones", "train/config.cpp"},
      {"decay_rate", "train/config.cpp"},
      {"warmup_prefix", "train/config.cpp"},
      {"cooldown_epochs", "train/schedule.cpp"},  // run_epochs, which the trainer runs
      {"patience_epochs", "train/schedule.cpp"},  // the plateau of RunSchedule
      {"lr_noise", "train/config.cpp"},
      {"lr_noise_pct", "train/config.cpp"},
      {"lr_noise_std", "train/config.cpp"},
      {"lr_cycle_mul", "train/config.cpp"},  // and cycle_epochs (train/schedule.cpp)
      {"lr_cycle_decay", "train/config.cpp"},
      {"lr_cycle_limit", "train/config.cpp"},
      {"lr_k_decay", "train/config.cpp"},
      {"schedule_history", "train/schedule.cpp"},
      {"grad_accum_steps", "train/trainer.cpp"},
      {"smoothing", "train/trainer.cpp"},
      {"model_ema", "train/trainer.cpp"},
      {"model_ema_decay", "train/trainer.cpp"},
      {"model_ema_warmup", "train/trainer.cpp"},
      {"initial_checkpoint", "train/trainer.cpp"},
      {"head_init_scale", "train/trainer.cpp"},
      {"head_init_bias", "train/trainer.cpp"},
      {"seed", "train/trainer.cpp"},
      {"precision", "train/trainer.cpp"},
      {"device", "train/trainer.cpp"},
      {"cuda_graph", "train/trainer.cpp"},
      {"gemm_autotune", "train/trainer.cpp"},
      {"threads", "app/train.cpp"},
      {"log_interval", "train/trainer.cpp"},
      {"checkpoint_hist", "train/trainer.cpp"},
      {"resume", "train/trainer.cpp"},
      {"no_resume_opt", "train/trainer.cpp"},
      {"start_epoch", "train/trainer.cpp"},
      {"recovery_interval", "train/trainer.cpp"},
      {"output", "train/trainer.cpp"},
      {"experiment", "train/trainer.cpp"},
      {"max_steps_per_epoch", "data/from_config.cpp"},
      {"dist_bucket_mb", "train/data_parallel.cpp"},
      {"zero_stage", "train/data_parallel.cpp"},
      {"dist_check_every", "train/data_parallel.cpp"},
      {"dist_timeout", "train/data_parallel.cpp"},
      {"dist_force", "train/data_parallel.cpp"},
  };
  const std::vector<std::string> all = hg::train::config_keys();
  std::set<std::string> keys(all.begin(), all.end()), listed;
  for (const auto& [k, f] : consumer) listed.insert(k);
  EXPECT_EQ(keys, listed) << "a config key without its consumer here, or a key that is gone";
  auto ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (const auto& [key, file] : consumer) {
    std::ifstream f(fs::path(HAARGRAD_SOURCE_DIR) / file);
    std::ostringstream os;
    os << f.rdbuf();
    const std::string text = os.str();
    bool read = false;
    for (const std::string var : {"cfg.", "c.", "config."})
      for (size_t at = text.find(var + key); !read && at != std::string::npos;
           at = text.find(var + key, at + 1)) {
        const size_t end = at + var.size() + key.size();
        read = (at == 0 || !ident(text[at - 1])) && (end == text.size() || !ident(text[end]));
      }
    EXPECT_TRUE(read) << "config key '" << key << "' is not read in " << file;
  }
}

// No setting hides in the environment: the variables the sources read are listed here with why.
// Kernel choices for comparisons are explicit arguments (kernels::cuda::Conv2dBackend), not
// environment switches.
TEST(Recipe, EnvironmentVariablesReadAreKnown) {
  const std::set<std::string> known = {
      "OMP_WAIT_POLICY",
      "GOMP_SPINCOUNT",
      "OMP_NUM_THREADS",  // OpenMP's own (core/threads.h)
      "COLUMNS",
      "PATH",                            // console width, finding gnuplot
      "HOME",                            // a path's leading ~ (train/config.h expand_home)
      "HAARGRAD_DIST_TEST_STALL_RANK"};  // a test hook (tests/dist)
  std::set<std::string> found;
  for (const char* dir : {"app", "core", "data", "dist", "kernels", "layers", "models", "train"})
    for (const auto& e : fs::recursive_directory_iterator(fs::path(HAARGRAD_SOURCE_DIR) / dir)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".cpp" && ext != ".h" && ext != ".cu" && ext != ".cuh") continue;
      std::ifstream f(e.path());
      std::ostringstream os;
      os << f.rdbuf();
      const std::string text = os.str();
      for (size_t at = text.find("getenv(\""); at != std::string::npos;
           at = text.find("getenv(\"", at + 1)) {
        const size_t b = at + 8, end = text.find('"', b);
        found.insert(text.substr(b, end - b));
      }
    }
  for (const std::string& v : found)
    EXPECT_TRUE(known.count(v)) << "unlisted environment switch " << v;
}
