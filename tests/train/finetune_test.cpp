// Fine-tuning start (initial_checkpoint): weights of a checkpoint made for another number of
// classes go into a new model, whose head keeps its fresh initialisation; same classes load
// everything; other mismatches are errors naming the keys.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include "captured_log.h"
#include "core/safetensors.h"
#include "models/checkpoint.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/finetune.h"
#include "train/optimizer.h"
#include "train/run_folder.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace hg;

namespace {
/// configs/smoke.yaml (a tiny model on synthetic data).
train::Config smoke_config() {
  return train::load_config(std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml");
}
/// A trainer's options with plain log lines.
train::TrainOptions quiet_options() {
  train::TrainOptions o;
  o.plain_output = true;
  return o;
}
ModelConfig smoke_model(int64_t classes) {
  train::Config c = smoke_config();
  c.num_classes = classes;
  return train::model_config_from(c);
}
std::string temp_file(const char* name) {
  return (fs::temp_directory_path() /
          (std::string("hg_finetune_") + std::to_string(::getpid()) + "_" + name))
      .string();
}
std::map<std::string, std::vector<float>> values(const ConvNeXt& m) {
  std::map<std::string, std::vector<float>> out;
  for (const ParamRef& p : m.named_tensors()) out[p.name] = p.tensor.to_vector<float>();
  return out;
}
/// The message of the hg::Error that train(cfg) throws (a test failure when it does not throw).
std::string train_error(const train::Config& cfg, const train::TrainOptions& opts) {
  try {
    train::train(cfg, opts);
    ADD_FAILURE() << "no error";
  } catch (const Error& err) {
    return err.what();
  }
  return "";
}
}  // namespace

TEST(InitialCheckpoint, OtherClassesReinitialiseTheHeadOnly) {
  const ConvNeXt pretrained(smoke_model(4), 11);
  const std::string path = temp_file("other.safetensors");
  // a haargrad checkpoint also holds optimizer state: it must be ignored here
  auto tensors = state_dict(pretrained);
  tensors.emplace_back("optimizer.step", Tensor::zeros({1}));
  safetensors::save(path, tensors);

  ConvNeXt model(smoke_model(7), 12);
  const auto fresh = values(model), want = values(pretrained);
  const train::InitialCheckpoint r = train::load_initial_checkpoint(path, model);
  EXPECT_TRUE(r.head_reinitialised);
  EXPECT_EQ(r.checkpoint_classes, 4);
  int loaded = 0;
  for (const auto& [name, v] : values(model)) {
    if (name.rfind("head.fc.", 0) == 0) {
      EXPECT_EQ(v, fresh.at(name)) << name;  // the new head as initialised
      EXPECT_EQ(v.size() % 7, 0u);
    } else {
      EXPECT_EQ(v, want.at(name)) << name;  // everything else from the checkpoint
      ++loaded;
    }
  }
  EXPECT_GT(loaded, 10);
  fs::remove(path);
}

// A backbone saved without its classifier (timm's num_classes=0: no head.fc.*) was refused for
// its missing keys; timm's pretrained loading keeps a fresh head, as for a head of other classes.
TEST(InitialCheckpoint, ABackboneWithoutAClassifierKeepsTheModelsFreshHead) {
  const ConvNeXt pretrained(smoke_model(4), 21);
  const std::string path = temp_file("headless.safetensors");
  auto tensors = state_dict(pretrained);
  std::erase_if(tensors, [](const auto& e) { return e.first.rfind("head.fc.", 0) == 0; });
  safetensors::save(path, tensors);
  ConvNeXt model(smoke_model(7), 22);
  const auto fresh = values(model), want = values(pretrained);
  const train::InitialCheckpoint r = train::load_initial_checkpoint(path, model);
  EXPECT_TRUE(r.head_reinitialised);
  EXPECT_EQ(r.checkpoint_classes, 0);
  for (const auto& [name, v] : values(model))
    EXPECT_EQ(v, name.rfind("head.fc.", 0) == 0 ? fresh.at(name) : want.at(name)) << name;
  // one of the two missing is a damaged file, not a backbone
  auto half = state_dict(pretrained);
  std::erase_if(half, [](const auto& e) { return e.first == "head.fc.bias"; });
  safetensors::save(path, half);
  ConvNeXt other(smoke_model(4), 23);
  try {
    train::load_initial_checkpoint(path, other);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head.fc.bias"), std::string::npos) << e.what();
  }
  fs::remove(path);
}

TEST(InitialCheckpoint, SameClassesLoadTheHeadAndMismatchesAreErrors) {
  const ConvNeXt pretrained(smoke_model(4), 13);
  const std::string path = temp_file("same.safetensors");
  safetensors::save(path, state_dict(pretrained));
  ConvNeXt model(smoke_model(4), 14);
  EXPECT_FALSE(train::load_initial_checkpoint(path, model).head_reinitialised);
  EXPECT_EQ(values(model), values(pretrained));

  train::Config wide = smoke_config();
  wide.dims = {16, 32};  // another body: not a fine-tuning case
  ConvNeXt other(train::model_config_from(wide), 15);
  try {
    train::load_initial_checkpoint(path, other);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("initial_checkpoint"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mis-shaped"), std::string::npos) << e.what();
  }
  fs::remove(path);
}

// A checkpoint of a run with a model EMA starts a fine-tuning run from the EMA's weights, as
// timm's load_checkpoint (use_ema) does: it gave the model's, though model_best was the best by
// the EMA's top-1.
TEST(InitialCheckpoint, ACheckpointWithAModelEmaGivesTheEmasWeights) {
  const ConvNeXt raw(smoke_model(4), 13), ema(smoke_model(4), 21);
  const std::string path = temp_file("ema.safetensors");
  train::save_checkpoint(path, raw, nullptr, train::TrainState{}, "", &ema);
  hg::test::CapturedLog log;
  ConvNeXt model(smoke_model(4), 14);
  EXPECT_TRUE(train::load_initial_checkpoint(path, model).ema);
  EXPECT_EQ(values(model), values(ema));
  EXPECT_NE(log.text().find("the model EMA's weights (state_dict_ema.*) loaded"), std::string::npos)
      << log.text();
  // without an EMA: the model's, as before
  safetensors::save(path, state_dict(raw));
  ConvNeXt plain(smoke_model(4), 14);
  EXPECT_FALSE(train::load_initial_checkpoint(path, plain).ema);
  EXPECT_EQ(values(plain), values(raw));
  fs::remove(path);
}

// A start file with non-finite weights (a diverged run's) loaded, and the run stopped at its first
// step on "non-finite loss at epoch 1 step 1 (nan)", which names neither the file nor the weights.
// The load refuses it, naming the file, the count and the first tensor.
TEST(InitialCheckpoint, NonFiniteWeightsAreNamedWhenLoaded) {
  const ConvNeXt pretrained(smoke_model(4), 31);
  auto tensors = state_dict(pretrained);
  for (auto& [name, t] : tensors)
    if (name == "stem.0.bias") {
      std::vector<float> v = t.to_vector<float>();
      v[1] = std::numeric_limits<float>::quiet_NaN();
      v[2] = std::numeric_limits<float>::infinity();
      t = Tensor::from_vector(t.shape(), v);
    }
  const std::string path = temp_file("nan.safetensors");
  safetensors::save(path, tensors);
  ConvNeXt model(smoke_model(4), 32);
  try {
    train::load_initial_checkpoint(path, model);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("initial_checkpoint " + path), std::string::npos) << msg;
    EXPECT_NE(msg.find("2 of its"), std::string::npos) << msg;
    EXPECT_NE(msg.find("non-finite"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'stem.0.bias'"), std::string::npos) << msg;
  }
  fs::remove(path);
}

// `haargrad train` with initial_checkpoint from a run with another num_classes: the weights load
// (head.fc re-initialised, said in the log), and the run trains on.
TEST(InitialCheckpoint, TrainerFineTunesFromACheckpointWithOtherClasses) {
  const fs::path root = temp_file("run");
  fs::remove_all(root);
  train::Config c = smoke_config();
  c.output = root.string();
  c.device = "cpu";
  c.epochs = 1;
  c.experiment = "pretrain";
  const train::TrainOptions quiet = quiet_options();
  const train::TrainResult pre = train::train(c, quiet);
  const std::string ckpt = (fs::path(pre.run_dir) / "last.safetensors").string();
  const auto pretrained = safetensors::load(ckpt).tensors;

  c.num_classes = 3;
  c.experiment = "finetune";
  c.initial_checkpoint = ckpt;
  c.lr = c.warmup_lr = 1e-12;  // the first step leaves the loaded weights as they are (to 1e-9)
  c.min_lr = 0;
  std::map<std::string, std::vector<float>> first_step;
  train::TrainOptions o = quiet;
  o.after_step = [&](int64_t, int64_t step, ConvNeXt& m) {
    if (step == 1) first_step = values(m);
    return false;
  };
  const train::TrainResult ft = train::train(c, o);
  EXPECT_GE(ft.best_top1, 0);
  ASSERT_FALSE(first_step.empty());
  for (const auto& [name, v] : first_step) {
    if (name.rfind("head.fc.", 0) == 0) {
      EXPECT_EQ(v.size() % 3, 0u) << name;  // the new 3-class head
      continue;
    }
    const std::vector<float> p = pretrained.at(name).to_vector<float>();
    ASSERT_EQ(p.size(), v.size()) << name;
    for (size_t i = 0; i < v.size(); ++i) ASSERT_NEAR(v[i], p[i], 1e-9) << name << "[" << i << "]";
  }
  std::ifstream log(fs::path(ft.run_dir) / "log.txt");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("head.fc is re-initialised"), std::string::npos) << text;
  fs::remove_all(root);
}

// A start checkpoint cut short (a copy that stopped: its header whole, its data not) was found only
// when the model loaded it, after the data was listed (minutes for a large image folder). Both a
// resume's checkpoint and an initial_checkpoint are now refused first: here the data folder does
// not exist, so an error naming the data would mean it was listed first.
TEST(InitialCheckpoint, ACheckpointCutShortIsRefusedBeforeTheData) {
  const fs::path root = temp_file("cut");
  fs::remove_all(root);
  train::Config c = smoke_config();
  c.output = root.string();
  c.device = "cpu";
  c.epochs = 1;
  c.experiment = "whole";
  const train::TrainOptions quiet = quiet_options();
  const train::TrainResult pre = train::train(c, quiet);
  const fs::path last = fs::path(pre.run_dir) / "last.safetensors";
  std::string bytes;
  {
    std::ifstream in(last, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const fs::path cut = root / "cut.safetensors";
  std::ofstream(cut, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 1000));

  train::Config d = c;
  d.dataset = "image_folder";
  d.data_dir = (root / "no_data").string();
  d.experiment = "start";
  for (const bool resume : {false, true}) {
    train::Config e = d;
    (resume ? e.resume : e.initial_checkpoint) = cut.string();
    const std::string msg = train_error(e, quiet);
    EXPECT_NE(msg.find(cut.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("the file is cut short"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("no_data"), std::string::npos) << "the data came first: " << msg;
  }
  fs::remove_all(root);
}

// A start file that is no safetensors file (a timm user's model.pth) or cannot be read: the error
// names the key it was given as (the reader's own text named the file only), and an
// initial_checkpoint is refused before a run folder is claimed: the output root was made (and
// left behind, empty) and the log said "run folder ..." first.
TEST(InitialCheckpoint, AStartFileThatIsNoSafetensorsFileIsNamedByItsKeyBeforeAnyFolder) {
  const fs::path root = temp_file("pth");
  fs::remove_all(root);
  fs::create_directories(root);
  const fs::path pth = root / "model.pth";
  std::ofstream(pth, std::ios::binary) << "PK\x03\x04" << std::string(64, 'x');  // torch.save: ZIP
  train::Config c = smoke_config();
  c.device = "cpu";
  const train::TrainOptions quiet = quiet_options();
  for (const bool resume : {false, true}) {
    train::Config e = c;
    (resume ? e.resume : e.initial_checkpoint) = pth.string();
    e.output = (root / (resume ? "out_r" : "out_i")).string();
    const std::string msg = train_error(e, quiet);
    EXPECT_EQ(msg.rfind(str(resume ? "resume: " : "initial_checkpoint: ", "safetensors '",
                            pth.string(), "': "),
                        0),
              0u)
        << msg;
    EXPECT_NE(msg.find("it is a ZIP archive, likely a PyTorch file"), std::string::npos) << msg;
    EXPECT_FALSE(fs::exists(e.output)) << msg;
  }
  fs::remove_all(root);
}

// A state_dict saved from a model in torch's DataParallel / DistributedDataParallel names every
// tensor "module.<name>"; timm's load_checkpoint (clean_state_dict) drops that prefix. It was
// "missing keys" for every tensor; it loads, as a start and as a checkpoint to evaluate.
TEST(InitialCheckpoint, ADataParallelStateDictLoadsWithoutItsModulePrefix) {
  const ConvNeXt pretrained(smoke_model(4), 21);
  const std::string path = temp_file("module.safetensors");
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (auto& [name, t] : state_dict(pretrained)) tensors.emplace_back("module." + name, t);
  safetensors::save(path, tensors);
  ConvNeXt start(smoke_model(4), 22), evaluated(smoke_model(4), 23);
  EXPECT_FALSE(train::load_initial_checkpoint(path, start).head_reinitialised);
  EXPECT_EQ(values(start), values(pretrained));
  train::load_checkpoint(path, evaluated, nullptr);
  EXPECT_EQ(values(evaluated), values(pretrained));
  fs::remove(path);
}

// Fine-tuning RGB weights (ImageNet's) on gray images (in_chans 1, Fashion-MNIST): timm's
// pretrained loading sums the stem's three input channels into one (adapt_input_conv); the start
// was refused with "stem.0.weight (checkpoint [8, 3, 2, 2], model [8, 1, 2, 2])".
TEST(InitialCheckpoint, RgbWeightsStartAGrayModelWithTheStemChannelsSummed) {
  const ConvNeXt rgb(smoke_model(4), 31);
  const std::string path = temp_file("rgb.safetensors");
  safetensors::save(path, state_dict(rgb));
  train::Config c = smoke_config();
  c.in_chans = 1;
  c.mean = {0.5};
  c.std = {0.5};
  ConvNeXt gray(train::model_config_from(c), 32);
  const train::InitialCheckpoint r = train::load_initial_checkpoint(path, gray);
  EXPECT_TRUE(r.stem_channels_summed);
  const auto got = values(gray), want = values(rgb);
  const std::vector<float>& w3 = want.at("stem.0.weight");
  const std::vector<float>& w1 = got.at("stem.0.weight");
  ASSERT_EQ(w1.size() * 3, w3.size());
  const size_t k = 2 * 2;  // patch 2: each output channel holds 3 x k values in the checkpoint
  for (size_t o = 0; o < w1.size() / k; ++o)
    for (size_t j = 0; j < k; ++j)
      EXPECT_FLOAT_EQ(w1[o * k + j],
                      w3[(o * 3 + 0) * k + j] + w3[(o * 3 + 1) * k + j] + w3[(o * 3 + 2) * k + j])
          << o << "," << j;
  for (const auto& [name, v] : got) {
    if (name != "stem.0.weight") {
      EXPECT_EQ(v, want.at(name)) << name;
    }
  }
  fs::remove(path);
}

// RGB weights of other widths into a gray model: the error names the widths, not in_chans (the
// three stem channels are summed, so in_chans is no reason for the mismatch).
TEST(InitialCheckpoint, AnRgbStartOfOtherWidthsNamesTheWidthsOnly) {
  train::Config c = smoke_config();
  const ConvNeXt rgb(train::model_config_from(c), 41);
  const std::string path = temp_file("rgb_wide.safetensors");
  train::save_checkpoint(path, rgb, nullptr, train::TrainState{}, train::to_yaml(c));
  c.in_chans = 1;
  c.mean = {0.5};
  c.std = {0.5};
  c.dims = {8, 32};
  ConvNeXt gray(train::model_config_from(c), 42);
  std::string msg;
  try {
    train::load_initial_checkpoint(path, gray);
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("the config stored in it has dims [8, 16] (the model: [8, 32]);"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("in_chans"), std::string::npos) << msg;
  fs::remove(path);
}

// A checkpoint whose optimizer tensors were removed (an edited file, or a weights-plus-position
// file from elsewhere) resumed silently with AdamW's moments at zero, a different run from the
// one saved. It still resumes, as timm's does, but says so; SGD without momentum keeps no state,
// so its checkpoints hold none and nothing is said.
TEST(ResumeCheckpoint, NoOptimizerStateAfterUpdatesIsSaid) {
  train::Config c = smoke_config();
  ConvNeXt model(train::model_config_from(c), 51);
  const std::string path = temp_file("no_opt_state.safetensors");
  train::TrainState st;
  st.epoch = 1;
  st.updates = 7;
  train::save_checkpoint(path, model, nullptr, st, train::to_yaml(c));
  const auto log_of = [&](train::Optimizer& opt) {
    const test::CapturedLog captured;
    EXPECT_EQ(train::load_checkpoint(path, model, &opt).updates, 7);
    return captured.text();
  };
  const auto groups = [&] {
    return train::param_groups_weight_decay(model.named_tensors(), 1e-3, 0.05);
  };
  train::AdamW adamw(groups());
  const std::string log = log_of(adamw);
  EXPECT_NE(log.find("holds no optimizer state (optimizer.*) after 7 updates"), std::string::npos)
      << log;
  train::SGD plain(groups(), 0.0);
  EXPECT_EQ(log_of(plain), "");
  fs::remove(path);
}

// `--resume RUN/last.safetensors` with a later recovery.safetensors beside it (a run stopped inside
// the next epoch) went on from last, redid the recovery's steps and removed it when the epoch
// ended, unsaid. The resume now names the recovery and how to go on from it; a recovery that is
// not further along, or another run's, is not mentioned.
TEST(ResumeCheckpoint, ALaterRecoveryBesideTheCheckpointIsNamed) {
  train::Config c = smoke_config();
  ConvNeXt model(train::model_config_from(c), 52);
  const fs::path dir = fs::path(temp_file("run_with_recovery"));
  fs::create_directories(dir);
  train::TrainState recovery;
  recovery.epoch = 1;
  recovery.step_in_epoch = 5;
  recovery.run = "run-a";
  train::save_checkpoint((dir / "recovery.safetensors").string(), model, nullptr, recovery,
                         train::to_yaml(c));
  train::TrainState last;
  last.epoch = 1;
  last.run = "run-a";
  const std::string from = (dir / "last.safetensors").string();
  const std::string note = train::newer_recovery_note(dir, from, last);
  EXPECT_NE(note.find("recovery.safetensors (in epoch 2 after step 5) is further along than"),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("resume with --resume " + (dir / "recovery.safetensors").string()),
            std::string::npos)
      << note;
  train::TrainState later = last;
  later.epoch = 2;
  EXPECT_EQ(train::newer_recovery_note(dir, from, later), "");
  train::TrainState other = last;
  other.run = "run-b";
  EXPECT_EQ(train::newer_recovery_note(dir, from, other), "");
  fs::remove_all(dir);
}

// timm train.py's --head-init-scale / --head-init-bias: head.fc's weight and bias x scale, then
// the bias set; nothing else changes.
TEST(HeadInit, ScalesThenSetsTheClassifierOnly) {
  ConvNeXt model(smoke_model(4), 13);
  const auto before = values(model);
  EXPECT_EQ(train::apply_head_init(model, std::nullopt, 0.5),
            "head_init_bias 0.5: head.fc's bias = 0.5");
  const std::string said = train::apply_head_init(model, 2.0, std::nullopt);
  EXPECT_EQ(said, "head_init_scale 2: head.fc's weight and bias x 2");
  for (const auto& [name, v] : values(model)) {
    if (name == "head.fc.weight") {
      ASSERT_EQ(v.size(), before.at(name).size());
      for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], 2 * before.at(name)[i]) << i;
    } else if (name == "head.fc.bias") {
      EXPECT_EQ(v, std::vector<float>(4, 1.0f));  // 0.5 x 2
    } else {
      EXPECT_EQ(v, before.at(name)) << name;
    }
  }
  train::apply_head_init(model, 0.0, -1.25);
  const auto after = values(model);  // (not a temporary's member in the loop)
  for (float w : after.at("head.fc.weight")) EXPECT_EQ(w, 0.0f);
  EXPECT_EQ(values(model).at("head.fc.bias"), std::vector<float>(4, -1.25f));
}

// The trainer applies them after initial_checkpoint, as timm's train.py does after create_model
// (its checkpoint_path): with lr 0 the run's checkpoint holds the scaled head of the start file.
TEST(HeadInit, TheTrainerAppliesThemToTheInitialCheckpointsHead) {
  const ConvNeXt pretrained(smoke_model(4), 14);
  const std::string start = temp_file("head_init_start.safetensors");
  safetensors::save(start, state_dict(pretrained));
  train::Config c = smoke_config();
  c.device = "cpu";
  c.output = temp_file("head_init_runs");
  c.epochs = 1;
  c.lr = 0.0;
  c.warmup_epochs = 0;
  c.min_lr = 0;
  c.initial_checkpoint = start;
  c.head_init_scale = 0.5;
  c.head_init_bias = 0.25;
  const train::TrainResult r = train::train(c, quiet_options());
  const safetensors::File f =
      safetensors::load((fs::path(r.run_dir) / "last.safetensors").string());
  const std::vector<float> w = f.tensors.at("head.fc.weight").to_vector<float>(),
                           w0 = values(pretrained).at("head.fc.weight");
  ASSERT_EQ(w.size(), w0.size());
  for (size_t i = 0; i < w.size(); ++i) EXPECT_EQ(w[i], 0.5f * w0[i]) << i;
  EXPECT_EQ(f.tensors.at("head.fc.bias").to_vector<float>(), std::vector<float>(4, 0.25f));
  EXPECT_EQ(f.tensors.at("stem.0.weight").to_vector<float>(),
            values(pretrained).at("stem.0.weight"));
  fs::remove(start);
  fs::remove_all(c.output);
}
