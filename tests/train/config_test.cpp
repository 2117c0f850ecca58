// Tests of train/config: located errors (key, file, line), command-line overrides, the args.yaml
// round trip, and that every shipped configs/*.yaml loads.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "captured_log.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "core/tensor.h"
#include "core/utf8.h"
#include "train/config.h"
#include "train/optimizer.h"

namespace fs = std::filesystem;
using hg::train::Config;

namespace {

// A fresh temporary folder per test, removed afterwards.
class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hg_config_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  // The message of the hg::Error that loading `text` throws ("" if none).
  std::string load_error(const std::string& text) {
    path_ = write("c.yaml", text);
    try {
      hg::train::load_config(path_);
    } catch (const hg::Error& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
  std::string path_;
};

std::string override_error(std::vector<std::string> args) {
  Config c;
  try {
    hg::train::apply_overrides(c, args);
  } catch (const hg::Error& e) {
    return e.what();
  }
  return "";
}

void expect_contains(const std::string& msg, const std::vector<std::string>& parts) {
  ASSERT_FALSE(msg.empty()) << "expected an error";
  for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

}  // namespace

TEST_F(ConfigTest, DefaultsAreValidAndKeysUnique) {
  Config c;
  EXPECT_NO_THROW(hg::train::validate(c));
  auto keys = hg::train::config_keys();
  EXPECT_GE(keys.size(), 50u);
  std::set<std::string> unique(keys.begin(), keys.end());
  EXPECT_EQ(unique.size(), keys.size());
  const std::string yaml = hg::train::to_yaml(c);
  for (const auto& k : keys) EXPECT_NE(yaml.find("\n" + k + ": "), std::string::npos) << k;
}

TEST_F(ConfigTest, LoadsValues) {
  Config c = hg::train::load_config(write("a.yaml",
                                          "model: wtconvnext_tiny\n"
                                          "lr: 4e-3\n"
                                          "clip_grad: 1.5\n"
                                          "validation_batch_size: 64\n"
                                          "depths: [1, 2]\n"
                                          "dims: [8, 16]\n"
                                          "wt_levels: [2, 1]\n"
                                          "model_ema: true\n"
                                          "resume:\n"));
  EXPECT_EQ(c.model, "wtconvnext_tiny");
  EXPECT_DOUBLE_EQ(c.lr.value(), 4e-3);
  ASSERT_TRUE(c.clip_grad.has_value());
  EXPECT_DOUBLE_EQ(*c.clip_grad, 1.5);
  EXPECT_EQ(c.validation_batch_size, std::optional<int64_t>(64));
  EXPECT_EQ(c.depths, (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(c.model_ema);
  EXPECT_EQ(c.resume, "");
  EXPECT_EQ(c.epochs, Config{}.epochs);  // untouched keys keep their defaults
  Config empty = hg::train::load_config(write("empty.yaml", "# nothing\n"));
  EXPECT_EQ(empty, Config{});
}

TEST_F(ConfigTest, AMissingFileSaysWhyAndSuggestsACloseName) {
  write("fashion_mnist.yaml", "epochs: 1\n");
  auto error_of = [](const std::string& path) {
    try {
      hg::train::load_config(path);
    } catch (const hg::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string typo = (dir_ / "fashion-mnist.yaml").string();
  expect_contains(error_of(typo),
                  {"cannot open file '" + typo + "'", "No such file or directory",
                   "did you mean '" + (dir_ / "fashion_mnist.yaml").string() + "'?"});
  const std::string msg = error_of((dir_ / "zzz.yaml").string());
  expect_contains(msg, {"No such file or directory"});
  EXPECT_EQ(msg.find("did you mean"), std::string::npos) << msg;
}

TEST_F(ConfigTest, UnknownKeyNamesKeyFileAndLine) {
  std::string msg = load_error("model: convnext_tiny\nepochs: 3\nlrr: 0.1\n");
  expect_contains(msg, {"'lrr'", path_, "line 3", "did you mean 'lr'"});
}

// A key in another case (a config written with capitals, --EPOCHS) got no suggestion: the case
// counted as edits, six for EPOCHS. Case costs nothing now.
TEST_F(ConfigTest, AnUnknownKeyInAnotherCaseSuggestsTheKey) {
  expect_contains(load_error("EPOCHS: 3\n"), {"'EPOCHS'", "line 1", "did you mean 'epochs'?"});
  expect_contains(override_error({"--WEIGHT-DECAY", "0.1"}), {"did you mean 'weight_decay'?"});
}

// timm's class_map (a file naming the classes in index order) has no counterpart: it was an
// unknown key with nothing on how the classes are numbered here. It says so.
TEST_F(ConfigTest, TimmsClassMapIsNamedAsUnsupported) {
  expect_contains(load_error("class_map: classes.txt\n"),
                  {"'class_map'", "line 1", "not supported", "natural order", "train --help"});
}

// YAML's merge key (`<<: *defaults`) is not in yaml-cpp, which reads it as a key named '<<': the
// message called it an unknown key. It says what it is and what to write instead, before the
// other unknown keys (the anchor's own key, here `defaults`).
TEST_F(ConfigTest, AYamlMergeKeyIsNamedAsUnsupported) {
  const std::string msg = load_error("defaults: &d\n  lr: 0.1\n<<: *d\nepochs: 2\n");
  expect_contains(msg, {"'<<'", "merge key", path_, "line 3", "not supported", "write the keys"});
  EXPECT_EQ(msg.find("unknown key"), std::string::npos) << msg;
  // what the message offers instead: an alias of a single value
  ASSERT_EQ(load_error("lr: &peak 0.002\nwarmup_lr: *peak\n"), "");
  EXPECT_EQ(hg::train::load_config(path_).warmup_lr, 0.002);
}

// timm's train.py writes None (or '') for the keys it fills from the model's pretrained config or
// the dataset, and for drop_path and cutmix_minmax when off: its args.yaml holds them so, and each
// means haargrad's default (timm's ConvNeXt value; crop_pct: README).
TEST_F(ConfigTest, TimmArgsYamlUnsetValuesMeanTheDefaults) {
  const std::string timm_args =
      "img_size: null\nnum_classes: null\nin_chans: null\ncrop_pct: null\nmean: null\n"
      "std: null\ninterpolation: ''\ndataset: ''\ndrop_path: null\ncutmix_minmax: null\n";
  ASSERT_EQ(load_error(timm_args), "");
  EXPECT_EQ(hg::train::load_config(path_), Config{});
  Config c = hg::train::load_config(write("set.yaml", "crop_pct: 0.95\ndrop_path: 0.1\n"));
  hg::train::apply_overrides(c, {"--crop-pct", "null", "--drop-path=null", "--interpolation="});
  EXPECT_EQ(c, Config{});
  // a key without such a timm value keeps refusing null
  expect_contains(load_error("epochs: null\n"), {"'epochs'", "line 1", "an integer"});
}

// An empty value on the command line for a key that is no string (`--lr $LR`, LR unset) was
// YAML's null: lr became lr_base scaling, unsaid. It is refused, named; null is still null, and a
// string key still takes ''.
TEST_F(ConfigTest, AnEmptyCommandLineValueOfANonStringKeyIsRefused) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--lr", ""}, {"--lr", " "}, {"--lr="}, {"--clip-grad", ""}, {"--mean", ""}}) {
    Config c;
    try {
      hg::train::apply_overrides(c, args);
      ADD_FAILURE() << args[0] << " was taken";
    } catch (const hg::Error& e) {
      expect_contains(e.what(), {"(command line): the value is empty (an unset shell variable?)"});
    }
  }
  Config c;
  c.lr = 0.5;
  hg::train::apply_overrides(c, {"--lr", "null", "--val-split", ""});
  EXPECT_FALSE(c.lr.has_value());
  EXPECT_EQ(c.val_split, "");
}

// A count near 2^63 overflowed the run's arithmetic unsaid (--epochs 9223372036854775807 trained
// nothing and exited 0; the message printed 2^63 back). Counts are bounded as the model's sizes
// are, in a file and on the command line; the seed takes any int64 >= 0.
TEST_F(ConfigTest, HugeCountsAreRefusedNamed) {
  for (const std::string key : {"--epochs", "--grad-accum-steps", "--validation-batch-size",
                                "--log-interval", "--decay-milestones"}) {
    Config c;
    try {
      hg::train::apply_overrides(c, {key, "9223372036854775807"});
      ADD_FAILURE() << key << " was taken";
    } catch (const hg::Error& e) {
      expect_contains(e.what(), {"of at most 2147483647, got 9223372036854775807"});
    }
  }
  expect_contains(load_error("epochs: 2147483648\n"), {"'epochs'", "line 1", "at most 2147483647"});
  Config c;
  hg::train::apply_overrides(c, {"--epochs", "2147483647", "--seed", "9223372036854775807"});
  EXPECT_EQ(c.epochs, 2147483647);
  EXPECT_EQ(c.seed, 9223372036854775807);
}

// A timm run's args.yaml with `--input-size 1 28 28` holds input_size: [1, 28, 28] (and img_size,
// in_chans null): it was refused as an unknown key. It is timm's data size over img_size, read as
// in_chans and img_size; not square, malformed, or disagreeing with a given key: refused, named.
TEST_F(ConfigTest, TimmsInputSizeInAFileIsImgSizeAndInChans) {
  ASSERT_EQ(load_error("model: wtconvnext_fmnist\ninput_size: [1, 28, 28]\nimg_size: null\n"
                       "in_chans: null\nmean: [0.5]\n"
                       "std: [0.5]\n"),
            "");
  const Config c = hg::train::load_config(path_);
  EXPECT_EQ(c.img_size, 28);
  EXPECT_EQ(c.in_chans, 1);
  expect_contains(load_error("input_size: [3, 28, 30]\n"),
                  {"'input_size'", "line 1", "not square"});
  expect_contains(load_error("input_size: [3, 28]\n"), {"'input_size'", "three integers"});
  expect_contains(load_error("input_size: [3, 4294967296, 4294967296]\n"),
                  {"'input_size'", "2147483647], got 4294967296"});
  expect_contains(load_error("img_size: 32\ninput_size: [3, 28, 28]\n"),
                  {"'input_size'", "line 2", "img_size (", "line 1) is 32: give one of them"});
  ASSERT_EQ(load_error("input_size: null\n"), "");
  EXPECT_EQ(hg::train::load_config(path_), Config{});
}

// `train.py /imagenet` writes data: /imagenet and data_dir: null into its args.yaml, and takes
// data as the data_dir: the file was refused ("unknown key 'data'"). It is data_dir; one given
// beside it must agree.
TEST_F(ConfigTest, TimmsPositionalDataDirInAFileIsDataDir) {
  ASSERT_EQ(load_error("data: /data/imagenet\ndata_dir: null\n"), "");
  EXPECT_EQ(hg::train::load_config(path_).data_dir, "/data/imagenet");
  expect_contains(load_error("data_dir: /data/b\ndata: /data/a\n"),
                  {"'data'", "line 2", "'/data/a'", "'/data/b' differ: give one of them"});
  ASSERT_EQ(load_error("data: null\n"), "");
  EXPECT_EQ(hg::train::load_config(path_), Config{});
  // read as a data_dir value is: '~' expanded, and the same folder however it is spelt agrees
  ASSERT_EQ(load_error("data: ~/imagenet\ndata_dir: ~/imagenet/\n"), "");
  EXPECT_EQ(hg::train::load_config(path_).data_dir, hg::train::expand_home("~/imagenet"));
}

// A key alone without its ':' (the last line of a file cut short) was read by yaml-cpp as the key
// with a null value: "given twice" or "expected a number, got null". PyYAML refuses such a file;
// it is named with its line. Keys with their ':' and the value on the next line still load.
TEST_F(ConfigTest, AKeyWithoutItsColonIsNamed) {
  expect_contains(load_error("lr_base: 0.1\nepochs: 3\nlr_base"),
                  {"line 3: 'lr_base' has no ':' after it"});
  expect_contains(load_error("epochs: 3\nwarmup_lr\n"), {"line 2: 'warmup_lr' has no ':'"});
  ASSERT_EQ(load_error("\"lr\": 0.5\nepochs:\n  3\n"), "");
  EXPECT_EQ(hg::train::load_config(path_).epochs, 3);
  ASSERT_EQ(load_error("{lr: 0.5, epochs: 4}\n"), "");
  EXPECT_EQ(hg::train::load_config(path_).epochs, 4);
  ASSERT_EQ(load_error("? epochs\n: 6\n"), "");  // an explicit key: its ':' on the next line
  EXPECT_EQ(hg::train::load_config(path_).epochs, 6);
  ASSERT_EQ(load_error("?\n  epochs\n: 7\n"), "");
  EXPECT_EQ(hg::train::load_config(path_).epochs, 7);
  // a flow mapping's key without a value is null there (valid YAML): the key's own message
  expect_contains(load_error("{lr: 0.5,\n epochs: 2, warmup_lr}\n"), {"'warmup_lr'", "null"});
}

// The model lists depths, dims and wt_levels: null is the named variant's value, as [] (README:
// "an empty list or null"); it was refused with "expected a list of integers, got null".
TEST_F(ConfigTest, ModelListsNullIsTheVariantsValue) {
  ASSERT_EQ(load_error("model: wtconvnext_tiny\ndepths: null\ndims: ~\nwt_levels:\n"), "");
  const Config c = hg::train::load_config(path_);
  EXPECT_TRUE(c.depths.empty() && c.dims.empty() && c.wt_levels.empty());
  // lists that must hold values keep refusing null
  expect_contains(load_error("scale: null\n"), {"'scale'", "line 1"});
}

// A timm args.yaml holds many keys haargrad does not know: one message names them all, each
// misspelt one with the keys it is close to and each timm key with what it is here (or that it is
// not needed), as a lone unknown key's message does.
TEST_F(ConfigTest, SeveralUnknownKeysAreNamedTogether) {
  // timm keys whose default is haargrad's only behaviour say so at another value (val_interval
  // was "did you mean 'log_interval'?"); at timm's default a file may hold them (timm_keys_test)
  expect_contains(
      load_error("val_interval: 2\neval_metric: loss\nclip_mode: agc\n"),
      {"'val_interval' (line 1; timm's --val-interval (default 1) is how haargrad runs",
       "'eval_metric' (line 2; timm's --eval-metric (default top1)", "'clip_mode' (line 3"});
  expect_contains(
      load_error("amp: true\nepochs: 3\nbce_loss: true\nlrr: 0.1\n"),
      {"3 unknown keys", path_,
       "'amp' (line 1; timm's --amp (float16 with loss scaling; --amp-dtype bfloat16 "
       "for bf16) is --precision bf16 here (bf16 needs no loss scaling; a GPU's speed-up: on the "
       "CPU bf16 is a slower reference))",
       "'bce_loss' (line 3; timm's --bce-loss is not supported",
       "'lrr' (line 4; did you mean 'lr'"});
  expect_contains(load_error("epoch: 3\nlearning_rate: 0.1\n"),
                  {"2 unknown keys", "'epoch' (line 1; did you mean 'epochs'?)",
                   "'learning_rate' (line 2"});
}

// What PyYAML (timm's config files) reads otherwise than yaml-cpp is refused, not read another
// way: y / n (strings to PyYAML, true to timm), a leading zero (octal to PyYAML: epochs: 010 is
// 8), and tags (!!str false is the string "false", !foo an error, !!binary bytes).
TEST_F(ConfigTest, WhatPyYamlReadsOtherwiseIsRefused) {
  for (const char* v : {"y", "Y", "n", "N"})
    expect_contains(load_error(std::string("model_ema: ") + v + "\n"),
                    {"'model_ema'", "line 1", "PyYAML", "write true or false"});
  EXPECT_TRUE(hg::train::config_from_yaml("model_ema: yes\n", "t").model_ema);  // YAML 1.1's
  expect_contains(load_error("epochs: 010\n"), {"'epochs'", "line 1", "leading zero", "octal"});
  expect_contains(load_error("lr: -010\n"), {"'lr'", "leading zero"});
  EXPECT_EQ(hg::train::config_from_yaml("lr: 0.010\nseed: 0\n", "t").lr, 0.01);
  Config o;
  hg::train::apply_overrides(o, {"--epochs", "010"});  // argparse's int("010")
  EXPECT_EQ(o.epochs, 10);
  expect_contains(load_error("model_ema: !!str false\n"),
                  {"'model_ema'", "!!str tagged string \"false\""});
  expect_contains(load_error("epochs: !foo 1\n"), {"'epochs'", "YAML tag '!foo'"});
  expect_contains(load_error("experiment: !!binary aGVsbG8=\n"),
                  {"'experiment'", "YAML tag 'tag:yaml.org,2002:binary'"});
  EXPECT_EQ(hg::train::config_from_yaml("experiment: !!str 123\n", "t").experiment, "123");
  // the key's own type's tag reads as the plain value, as PyYAML reads it
  const Config typed = hg::train::config_from_yaml(
      "model_ema: !!bool true\nepochs: !!int 5\nlr: !!float 0.5\n", "t");
  EXPECT_TRUE(typed.model_ema);
  EXPECT_EQ(typed.epochs, 5);
  EXPECT_EQ(typed.lr, 0.5);
  expect_contains(load_error("epochs: !!float 5\n"), {"'epochs'", "YAML tag"});
  expect_contains(override_error({"--model-ema", "n"}), {"got 'n'; write true or false"});
}

TEST_F(ConfigTest, WrongTypeNamesKeyFileAndLine) {
  expect_contains(load_error("lr: 0.1\nepochs: three\n"), {"'epochs'", path_, "line 2", "integer", "'three'"});
  expect_contains(load_error("\n\ndepths: 3\n"), {"'depths'", "line 3", "list of integers"});
  // quoted numbers and booleans are strings in YAML (and in timm's PyYAML)
  expect_contains(load_error("lr: \"1e-3\"\n"), {"'lr'", "line 1", "the quoted string \"1e-3\""});
  expect_contains(load_error("model_ema: 'true'\n"), {"'model_ema'", "quoted string"});
  expect_contains(load_error("depths: [2, \"2\"]\n"), {"'depths'", "quoted string"});
  expect_contains(load_error("dims: [1, x, 3]\n"), {"'dims'", "line 1", "'x'"});
  expect_contains(load_error("clip_grad: off\n"), {"'clip_grad'", "line 1", "number or null"});
  expect_contains(load_error("hflip: [1]\n"), {"'hflip'", "line 1", "a number"});
  expect_contains(load_error("model_ema: 3\n"), {"'model_ema'", "true or false"});
  expect_contains(load_error("model_ema: 01\n"), {"'model_ema'", "true or false"});
  expect_contains(load_error("model: [a]\n"), {"'model'", "a string"});
}

TEST_F(ConfigTest, OutOfRangeNamesKeyFileAndLine) {
  expect_contains(load_error("model: convnext_atto\nlr: -1\n"),
                  {"'lr'", path_, "line 2", ">= 0", "-1"});
  expect_contains(load_error("opt: adam\n"), {"'opt'", "line 1", "'adamw'", "'sgd'", "'adam'"});
  expect_contains(load_error("a_comment: 1\n"), {"unknown key 'a_comment'"});
  expect_contains(load_error("x: 1\n"), {"unknown key 'x'"});
  expect_contains(load_error("scale: [0.5]\n"), {"'scale'", "list of 2"});
  expect_contains(load_error("smoothing: 1.0\n"), {"'smoothing'", "[0, 1)"});
  expect_contains(load_error("in_chans: 2\nmean: [0.5, 0.5]\nstd: [0.5, 0.5]\n"), {"'in_chans'", "line 1"});
  expect_contains(load_error("workers: -1\n"), {"'workers'", "-1"});
  expect_contains(load_error("\nlr: .nan\n"), {"'lr'", "line 2"});
}

// crop_pct > 1 was refused ("in (0, 1]"); timm's evaluation takes it (the crop is padded,
// data/transforms.h). It stays above 0, and small enough to leave the resized side a pixel.
TEST_F(ConfigTest, CropPctAboveOneIsTakenAsTimmDoes) {
  ASSERT_EQ(load_error("crop_pct: 1.15\n"), "");
  EXPECT_EQ(hg::train::load_config(path_).crop_pct, 1.15);
  Config o;
  hg::train::apply_overrides(o, {"--crop-pct", "2"});
  EXPECT_EQ(o.crop_pct, 2.0);
  expect_contains(load_error("crop_pct: 0\n"), {"'crop_pct'", path_, "line 1", "> 0"});
  expect_contains(load_error("\ncrop_pct: -1\n"), {"'crop_pct'", "line 2", "> 0"});
  expect_contains(load_error("img_size: 28\ncrop_pct: 29\n"),
                  {"'crop_pct'", "line 2", "'img_size'", "floor(28 / 29) = 0 pixels"});
  // a crop_pct so small that the resized side passes int64 was taken (and the eval resize failed
  // without naming it)
  expect_contains(load_error("img_size: 28\ncrop_pct: 1.0e-30\n"),
                  {"'crop_pct'", "line 2", "'img_size'", "more than 2^30"});
  ASSERT_EQ(load_error("img_size: 224\ncrop_pct: 1.0e-6\n"), "");
}

// One mean / std value for an RGB model was refused ("mean has 1 values, in_chans is 3"); timm's
// resolve_data_config repeats it for every channel, in a config file and on the command line.
TEST_F(ConfigTest, OneMeanOrStdValueStandsForEveryChannel) {
  const Config c = hg::train::config_from_yaml("mean: [0.5]\nstd: [0.25]\n", "x.yaml");
  EXPECT_EQ(c.mean, (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_EQ(c.std, (std::vector<double>{0.25, 0.25, 0.25}));
  Config o;
  hg::train::apply_overrides(o, {"--mean", "0.5", "--std", "0.5"});
  EXPECT_EQ(o.mean, (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_EQ(o.std, (std::vector<double>{0.5, 0.5, 0.5}));
  // two values for three channels stay an error naming both keys
  expect_contains(load_error("mean: [0.5, 0.5]\n"), {"'mean'", "'in_chans'", "mean has 2 values"});
}

// `--experiment runs/` (a shell's completion of an existing folder) was refused as a name leading
// out of output; it names the folder runs, in a file and on the command line.
TEST_F(ConfigTest, AnExperimentWithATrailingSlashNamesTheFolder) {
  Config o;
  hg::train::apply_overrides(o, {"--experiment", "runs/a//"});
  EXPECT_EQ(o.experiment, "runs/a");
  EXPECT_EQ(hg::train::config_from_yaml("experiment: runs/\n", "x.yaml").experiment, "runs");
  expect_contains(override_error({"--experiment", "/"}), {"'experiment'", "inside output"});
}

// yaml-cpp takes a quote left open at the end of a file as one value of every line after it: the
// experiment was named 'my run lr: 0.01 ' and lr fell back to its default, unsaid (PyYAML refuses
// such a file). A quoted value must end on its line; quotes that do (escaped, doubled, a '#'
// inside) still parse.
TEST_F(ConfigTest, AnUnclosedQuoteIsNamedNotSwallowingTheLinesAfterIt) {
  expect_contains(load_error("epochs: 2\nexperiment: \"my run\nlr: 0.01\n"),
                  {"line 2", "the value quoted by \" there does not end on its line"});
  expect_contains(load_error("experiment: 'my run\nlr: 0.01\n"), {"line 1", "quoted by '"});
  const Config c = hg::train::config_from_yaml(
      "experiment: \"a \\\" # b\"\nmodel: 'convnext_atto'\n"
      "data_dir: 'it''s'\n",
      "x.yaml");
  EXPECT_EQ(c.experiment, "a \" # b");
  // a Notepad file (byte order mark, CR LF): yaml-cpp's positions start after the mark
  EXPECT_EQ(load_error("\xEF\xBB\xBF"
                       "experiment: 'x'\r\nlr: 0.1\r\n"),
            "");
  EXPECT_EQ(load_error("experiment: 'x' \nlr: 0.1\n"), "");
  EXPECT_EQ(c.model, "convnext_atto");
  EXPECT_EQ(c.data_dir, "it's");
}

TEST_F(ConfigTest, CrossKeyChecksNameBothKeys) {
  expect_contains(load_error("in_chans: 1\n"), {"'mean'", "'in_chans'", "line 1", "in_chans is 1"});
  expect_contains(load_error("depths: [1, 1]\ndims: [8, 16, 32]\n"), {"'dims'", "'depths'", "line 1", "line 2"});
  expect_contains(load_error("scale: [0.9, 0.1]\n"), {"'scale'", "min"});
  expect_contains(load_error("lr: 0.01\nmin_lr: 0.1\n"), {"'min_lr'", "line 2", "'lr'", "line 1"});
  // the mixing key that is set is named (cutmix alone was blamed on 'mixup')
  const std::string odd = load_error("cutmix: 1.0\nbatch_size: 3\n");
  expect_contains(odd, {"'batch_size'", "line 2", "'cutmix'", "line 1", "must be even"});
  EXPECT_EQ(odd.find("'mixup'"), std::string::npos) << odd;
  // timm's vflip is named as such (it was "did you mean 'hflip'?", a different flip)
  expect_contains(load_error("vflip: 0.5\n"), {"'vflip'", "timm's --vflip", "not supported"});
  // in_chans 2 was called a mean problem first ("mean has 3 values, in_chans is 2")
  const std::string two = load_error("in_chans: 2\n");
  expect_contains(two, {"'in_chans'", "expected 1 or 3, got 2"});
  EXPECT_EQ(two.find("'mean'"), std::string::npos) << two;
  // values the f32 normalisation or layer scale cannot hold (std 1e-50 is 0 as a float, 1e39
  // infinite) were accepted and met as a non-finite loss naming no key
  expect_contains(load_error("std: [1e-50]\n"), {"'std'", "line 1"});
  expect_contains(load_error("mean: [1e39]\n"), {"'mean'", "line 1"});
  expect_contains(load_error("ls_init_value: 1e39\n"),
                  {"'ls_init_value'", "must be finite as an f32"});
  // a size the sampler's permutation cannot hold is named, not "out of host memory"
  expect_contains(load_error("synthetic_size: 100000000000\n"), {"'synthetic_size'", "line 1"});
  expect_contains(load_error("opt: sgd\nmomentum: 0\n"),
                  {"'opt'", "'momentum'", "Nesterov", "line 2"});
}

// timm's --opt-eps and --opt-betas: AdamW's, null (timm's None, as its args.yaml holds them) is
// torch's default; a value an optimizer without them would drop (timm drops it silently) and a
// list that is not a pair are refused naming the key.
TEST_F(ConfigTest, OptEpsAndOptBetasAreAdamWsAndChecked) {
  const Config set = hg::train::config_from_yaml(
      "opt: adamw\nopt_eps: 1.0e-6\nopt_betas: [0.8, 0.95]\n", "x.yaml");
  EXPECT_EQ(set.opt_eps, 1e-6);
  EXPECT_EQ(set.opt_betas, (std::vector<double>{0.8, 0.95}));
  const hg::train::AdamSettings adam = hg::train::adam_settings(set);
  EXPECT_EQ(adam.eps, 1e-6);
  EXPECT_EQ(adam.beta1, 0.8);
  EXPECT_EQ(adam.beta2, 0.95);
  const Config unset =
      hg::train::config_from_yaml("opt: adamw\nopt_eps: null\nopt_betas: null\n", "x.yaml");
  const hg::train::AdamSettings torch = hg::train::adam_settings(unset);
  EXPECT_EQ(torch.eps, 1e-8);
  EXPECT_EQ(torch.beta1, 0.9);
  EXPECT_EQ(torch.beta2, 0.999);
  expect_contains(load_error("opt: adamw\nopt_betas: [0.9]\n"), {"'opt_betas'", "line 2"});
  expect_contains(load_error("opt: adamw\nopt_betas: []\n"), {"'opt_betas'", "line 2"});
  // torch's defaults written out (an args.yaml of this version holds them) are every config's
  const Config written =
      hg::train::config_from_yaml("opt: sgd\nopt_eps: 1.0e-8\nopt_betas: [0.9, 0.999]\n", "x.yaml");
  EXPECT_EQ(written.opt_eps, Config{}.opt_eps);
  EXPECT_EQ(written.opt_betas, Config{}.opt_betas);
  expect_contains(load_error("opt: adamw\nopt_betas: [0.9, 1.0]\n"), {"'opt_betas'", "line 2"});
  expect_contains(load_error("opt: adamw\nopt_betas: [0.9, 0.99, 0.999]\n"), {"'opt_betas'"});
  expect_contains(load_error("opt: adamw\nopt_eps: -1.0e-8\n"), {"'opt_eps'", "line 2"});
  // 0 is torch's to take, but a parameter whose gradient and moments are 0 steps by 0 / 0 (NaN)
  expect_contains(load_error("opt: adamw\nopt_eps: 0\n"), {"'opt_eps'", "line 2"});
  expect_contains(load_error("opt: sgd\nopt_eps: 1.0e-6\n"), {"'opt_eps'", "'opt'", "opt: adamw"});
  expect_contains(load_error("opt: momentum\nopt_betas: [0.8, 0.95]\n"),
                  {"'opt_betas'", "'opt'", "line 2"});
}

// gpu_augment or a GPU decode with device cpu was refused only when the loader was built, as
// "gpu_augment / decode: cpu run on the GPU; device is cpu" (decode cpu runs on the GPU?). The
// config names the key that asks for the GPU, with device, and their lines.
TEST_F(ConfigTest, GpuAugmentOrGpuDecodeOnTheCpuNamesBothKeys) {
  const std::string augment = load_error("device: cpu\ngpu_augment: true\n");
  expect_contains(augment, {"'gpu_augment'", "line 2", "'device'", "line 1", "gpu_augment: false"});
  EXPECT_EQ(augment.find("decode: cpu"), std::string::npos) << augment;
  expect_contains(load_error("decode: nvjpeg_gpu\ndevice: cpu\n"),
                  {"'decode'", "line 1", "'device'", "line 2", "nvjpeg_gpu", "decode: cpu"});
  EXPECT_EQ(load_error("device: auto\ngpu_augment: true\ncolor_jitter: 0\n"), "");
}

// timm's color_jitter is a float or a 3 / 4-tuple (brightness, contrast, saturation[, hue]); a
// YAML list was "expected a number, got a list" with nothing on what the key takes. Both forms
// load, write back as given, and come from the command line as timm's separate words; another
// count or a hue past torchvision's 0.5 is named with the key, file and line.
TEST_F(ConfigTest, ColorJitterTakesTimmsFloatOrList) {
  EXPECT_EQ(load_error("color_jitter: 0.3\n"), "");
  EXPECT_EQ(hg::train::load_config(path_).color_jitter, (std::vector<double>{0.3}));
  EXPECT_NE(hg::train::to_yaml(hg::train::load_config(path_)).find("\ncolor_jitter: 0.3\n"),
            std::string::npos);
  EXPECT_EQ(load_error("seed: 1\ncolor_jitter: [0.4, 0.3, 0.2, 0.1]\n"), "");
  const Config four = hg::train::load_config(path_);
  EXPECT_EQ(four.color_jitter, (std::vector<double>{0.4, 0.3, 0.2, 0.1}));
  EXPECT_EQ(hg::train::config_from_yaml(hg::train::to_yaml(four), "args.yaml").color_jitter,
            four.color_jitter);
  Config cli;
  hg::train::apply_overrides(cli, {"--color-jitter", "0.4", "0.4", "0.2"});
  EXPECT_EQ(cli.color_jitter, (std::vector<double>{0.4, 0.4, 0.2}));
  expect_contains(load_error("seed: 1\ncolor_jitter: [0.4, 0.3]\n"),
                  {"key 'color_jitter' (" + path_ + " line 2)",
                   "expected a number or a list of 3 to 4 numbers, got a list of 2",
                   "[brightness, contrast, saturation] or [..., hue]"});
  expect_contains(load_error("color_jitter: [0.4, 0.4, 0.4, 0.7]\n"),
                  {"key 'color_jitter' (" + path_ + " line 1)", "hue (4th value)", "0.7"});
}

// A key the command line left as it was, in an error that two keys make: it read "(value before
// the command line)"; it names the config file it came from (or its default).
TEST_F(ConfigTest, AKeyBeforeTheCommandLineIsNamedWithItsFile) {
  hg::train::Config c = hg::train::config_from_yaml("gpu_augment: true\n", "x.yaml");
  std::string msg;
  try {
    hg::train::apply_overrides(c, {"--device", "cpu"}, "runs/x.yaml");
  } catch (const hg::Error& e) {
    msg = e.what();
  }
  expect_contains(msg, {"'gpu_augment' (runs/x.yaml or its default)", "'device' (command line)"});
}

// timm's lr: null (the default) is computed from lr_base at run time (train/schedule_test.cpp);
// the base keys load, check their ranges and survive a round trip through YAML.
TEST_F(ConfigTest, LrNullAndLrBase) {
  EXPECT_FALSE(Config{}.lr.has_value());
  const Config c = hg::train::config_from_yaml(
      "lr: null\nlr_base: 4.0e-3\nlr_base_size: 4096\nlr_base_scale: linear\nopt: momentum\n"
      "momentum: 0\n",
      "x.yaml");
  EXPECT_FALSE(c.lr.has_value());
  EXPECT_DOUBLE_EQ(c.lr_base, 4e-3);
  EXPECT_EQ(c.lr_base_size, 4096);
  EXPECT_EQ(c.lr_base_scale, "linear");
  EXPECT_EQ(hg::train::config_from_yaml(hg::train::to_yaml(c), "args.yaml"), c);
  expect_contains(load_error("lr_base_scale: cube\n"), {"'lr_base_scale'", "'sqrt'", "'cube'"});
  expect_contains(load_error("lr_base: 0\n"), {"'lr_base'", "> 0"});
  expect_contains(load_error("lr_base_size: 0\n"), {"'lr_base_size'", ">= 1"});
}

// lr 0 is a run that never moves its weights (timm trains with it: debugging, throughput, a
// schedule that is all warmup from warmup_lr): it loads from a file, the command line and a
// resume's schedule_history; a negative or non-finite lr is still refused, naming key and line.
TEST_F(ConfigTest, LrZeroLoadsNegativeLrIsRefused) {
  const std::string path = write("zero.yaml", "model: convnext_atto\nlr: 0\nwarmup_epochs: 0\n");
  const Config c = hg::train::load_config(path);
  ASSERT_TRUE(c.lr.has_value());
  EXPECT_EQ(*c.lr, 0.0);
  EXPECT_EQ(hg::train::config_from_yaml(hg::train::to_yaml(c), "args.yaml"), c);
  Config resumed = c;  // a resume recorded the lr-0 part of the run in schedule_history
  resumed.lr = 0.1;
  resumed.schedule_history = {{2, 0, 5, 0.0, "cosine", 0, 1e-5, 0.0, false}};
  EXPECT_EQ(hg::train::config_from_yaml(hg::train::to_yaml(resumed), "args.yaml"), resumed);
  Config o;
  hg::train::apply_overrides(o, {"--lr", "0"});
  EXPECT_EQ(o.lr, std::optional<double>(0.0));
  EXPECT_EQ(load_error("lr: 0.0\nmin_lr: 0\nwarmup_lr: 0\n"), "");
  expect_contains(load_error("\nlr: -1.0e-3\n"), {"'lr'", path_, "line 2", ">= 0", "-0.001"});
  expect_contains(load_error("lr: .inf\n"), {"'lr'", path_, "line 1"});
  expect_contains(load_error("lr: -.inf\n"), {"'lr'", path_, "line 1"});
  // min_lr is still the cosine's floor: above an lr of 0 it names both keys
  expect_contains(load_error("lr: 0\nmin_lr: 1.0e-5\n"), {"'min_lr'", "line 2", "'lr'", "line 1"});
}

// A checkpoint given as the config, or a YAML file of two documents, is named as such.
TEST_F(ConfigTest, ACheckpointOrTwoDocumentsAreNoConfig) {
  const std::string ck = write("last.safetensors", "whatever");
  try {
    hg::train::load_config(ck);
    ADD_FAILURE() << "expected an error";
  } catch (const hg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a checkpoint, not a YAML config"), std::string::npos)
        << e.what();
  }
  // with its run's args.yaml beside it, the command is `train --resume CKPT` (which reads that
  // file) and names it; it said "RUN/args.yaml" whether or not the file was there
  write("args.yaml", "epochs: 1\n");
  try {
    hg::train::load_config(ck);
    ADD_FAILURE() << "expected an error";
  } catch (const hg::Error& e) {
    const std::string args = (std::filesystem::path(ck).parent_path() / "args.yaml").string();
    EXPECT_NE(std::string(e.what()).find("resume it with `haargrad train --resume " + ck +
                                         "` (its run's config, " + args + ")"),
              std::string::npos)
        << e.what();
  }
  expect_contains(load_error("epochs: 1\n---\nlr: 0.1\n"), {"2 YAML documents"});
  // weights alone (an export) were told to be resumed, which --resume refuses for them: they
  // start a new run
  const std::string w = (dir_ / "w.safetensors").string();
  hg::safetensors::save(w, {{"head.fc.bias", hg::Tensor::zeros({4})}}, {{"format", "pt"}});
  try {
    hg::train::load_config(w);
    ADD_FAILURE() << "expected an error";
  } catch (const hg::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("is a file of weights (an export or a timm state_dict), not a YAML config"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("--initial-checkpoint " + w), std::string::npos) << m;
    EXPECT_EQ(m.find("--resume"), std::string::npos) << m;
  }
}

// The commands these messages suggest are pasted into a shell: a path with a space or a quote
// in it was printed as it is, and the pasted command split it ("checkpoint /tmp/my does not
// exist"). Such a path is single-quoted now; a plain one stays as it was (above).
TEST_F(ConfigTest, SuggestedCommandsQuoteTheirPaths) {
  fs::create_directories(dir_ / "my runs");
  const std::string ck = (dir_ / "my runs" / "it's last.safetensors").string();
  std::ofstream(ck) << "whatever";
  std::ofstream(dir_ / "my runs" / "args.yaml") << "epochs: 1\n";
  const std::string quoted_ck = "'" + (dir_ / "my runs").string() + "/it'\\''s last.safetensors'";
  try {
    hg::train::load_config(ck);
    ADD_FAILURE() << "expected an error";
  } catch (const hg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("`haargrad train --resume " + quoted_ck + "`"),
              std::string::npos)
        << e.what();
  }
  const std::string w = (dir_ / "my runs" / "w $1.safetensors").string();
  hg::safetensors::save(w, {{"head.fc.bias", hg::Tensor::zeros({4})}}, {{"format", "pt"}});
  try {
    hg::train::load_config(w);
    ADD_FAILURE() << "expected an error";
  } catch (const hg::Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("`haargrad train CONFIG.yaml --initial-checkpoint '" + w + "'`"),
        std::string::npos)
        << e.what();
  }
}

TEST_F(ConfigTest, DuplicateKeyAndSyntaxErrors) {
  expect_contains(load_error("lr: 0.1\nepochs: 2\nlr: 0.2\n"), {"'lr'", "line 3", "twice", "line 1"});
  expect_contains(load_error("lr: 0.1\ndepths: [1, 2\n"), {"cannot parse", path_, "line"});
  expect_contains(load_error("- lr\n- 0.1\n"), {"mapping", path_});
  std::string missing = (dir_ / "nope.yaml").string();
  try {
    hg::train::load_config(missing);
    ADD_FAILURE() << "expected an error";
  } catch (const hg::Error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos);
  }
}

// timm's command line takes a list as separate words (argparse nargs: `--mean 0.485 0.456 0.406`,
// `--scale 0.08 1.0`); the second word was "expected '--key value' on the command line, got
// '0.456'". A list key takes every word up to the next option.
TEST_F(ConfigTest, AListKeyTakesSeparateWordsAsTimmsCommandLine) {
  Config c;
  hg::train::apply_overrides(
      c, {"--mean",   "0.485", "0.456",    "0.406",  "--scale", "0.08", "1.0",
          "--depths", "1",     "1",        "--dims", "8",       "16",   "--wt-levels",
          "1",        "1",     "--epochs", "3",      "--std",   "0.5",  "--model-ema"});
  EXPECT_EQ(c.mean, (std::vector<double>{0.485, 0.456, 0.406}));
  EXPECT_EQ(c.scale, (std::vector<double>{0.08, 1.0}));
  EXPECT_EQ(c.depths, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(c.epochs, 3);
  EXPECT_EQ(c.std, (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_TRUE(c.model_ema);
  expect_contains(override_error({"--scale", "0.08", "1.0", "0.5"}),
                  {"'scale'", "command line", "expected a list of 2 values, got 3"});
  // a scalar key still takes one word
  expect_contains(override_error({"--epochs", "3", "4"}), {"got '4'"});
}

// timm's train.py options that haargrad spells otherwise were "unknown key" alone: the message
// names the key to use here (its short options -b, -vb, -j are taken:
// TimmsShortOptionsAreTheirKeys).
TEST_F(ConfigTest, TimmsOptionsOfOtherNamesSayTheKeyToUse) {
  expect_contains(override_error({"--amp"}),
                  {"unknown key 'amp' (command line): timm's --amp (float16 with loss scaling; "
                   "--amp-dtype bfloat16 for bf16) is --precision bf16 here"});
  expect_contains(override_error({"--pretrained"}),
                  {"timm's --pretrained is --initial-checkpoint FILE.safetensors here"});
  expect_contains(override_error({"--input-size", "3", "224", "224"}),
                  {"timm's --input-size is --img-size and --in-chans here"});
  expect_contains(load_error("drop_path_rate: 0.1\n"),
                  {"'drop_path_rate'", "line 1",
                   "timm's drop_path_rate (a model argument) is "
                   "--drop-path here"});
  // in a file too (a timm args.yaml holds amp)
  expect_contains(load_error("amp: true\n"),
                  {"unknown key 'amp'",
                   "timm's --amp (float16 with loss scaling; --amp-dtype bfloat16 for bf16) is "
                   "--precision bf16 here"});
}

// One number for a list key in a file is a list of one, as on the command line: `mean: 0.5` (timm's
// one value for every channel) was refused in a file ("expected a list of numbers, got '0.5'")
// where `--mean 0.5` was taken.
TEST_F(ConfigTest, ANumberForAListKeyInAFileIsAListOfOne) {
  const Config c = hg::train::load_config(write("m.yaml", "mean: 0.5\nstd: 0.25\n"));
  EXPECT_EQ(c.mean, (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_EQ(c.std, (std::vector<double>{0.25, 0.25, 0.25}));
  expect_contains(load_error("scale: 0.5\n"), {"'scale'", "expected a list of 2 values, got 1"});
  expect_contains(load_error("mean: abc\n"), {"'mean'", "abc"});
}

// Several unknown keys on the command line are named in one message, as in a file (the first alone
// was named, then the next one on the next run); a value of a known key is not taken for a key.
TEST_F(ConfigTest, SeveralUnknownKeysOnTheCommandLineAreNamedTogether) {
  expect_contains(override_error({"--amp", "--epochs", "2", "--channels-last", "--foo=1",
                                  "--experiment", "--bar"}),
                  {"3 unknown keys on the command line", "'amp' (timm's --amp",
                   "'channels_last' (timm's --channels-last", "'foo'"});
  EXPECT_EQ(override_error({"--amp", "--experiment", "--bar"}).find("'bar'"), std::string::npos);
  expect_contains(override_error({"--foo", "1", "--epochs", "2"}),
                  {"unknown key 'foo' (command line)"});
}

// What a timm user types gets the way to say it here: validate.py's --split, argparse's --no-X for
// a flag, and an lr below min_lr with the value that fixes it.
TEST_F(ConfigTest, TimmSpellingsAndAnLrBelowMinLrSayWhatToType) {
  expect_contains(override_error({"--split", "test"}), {"'split'", "--val-split"});
  expect_contains(override_error({"--no-model-ema"}), {"'no_model_ema'", "--model-ema false"});
  expect_contains(override_error({"--no-such-thing"}), {"'no_such_thing'"});
  EXPECT_EQ(override_error({"--no-such-thing"}).find("false"), std::string::npos);
  expect_contains(override_error({"--lr", "0", "--min-lr", "1e-5"}),
                  {"'min_lr'", "'lr'", "min_lr 1e-05 is above lr 0", "--min-lr 0"});
}

// A key the command line left, in a check with one it set, is named at its line of the config file
// ("x.yaml or its default" named no line), or as the default where the file does not give it.
TEST_F(ConfigTest, AKeyTheCommandLineLeftIsNamedAtItsLineOfTheFile) {
  const std::string path = write("lr.yaml", "epochs: 3\nmin_lr: 1.0e-4\n");
  Config c = hg::train::load_config(path);
  std::string msg;
  try {
    hg::train::apply_overrides(c, {"--lr", "1e-5"}, path);
  } catch (const hg::Error& e) {
    msg = e.what();
  }
  expect_contains(msg, {"'min_lr' (" + path + " line 2)", "'lr' (command line)", "--min-lr 1e-05"});
  const std::string other = write("other.yaml", "epochs: 3\n");
  Config d = hg::train::load_config(other);
  msg.clear();
  try {
    hg::train::apply_overrides(d, {"--momentum", "0"}, other);  // opt sgd (the default) needs one
  } catch (const hg::Error& e) {
    msg = e.what();
  }
  expect_contains(msg, {"'opt' (the default: not in " + other + ")", "'momentum' (command line)"});
  // an architecture key --model replaced is the new model's default, not the file's line
  const std::string arch =
      write("arch.yaml", "model: wtconvnext_fmnist\ndepths: [2, 2]\ndims: [48, 96]\n");
  Config e = hg::train::load_config(arch);
  msg.clear();
  try {
    hg::train::apply_overrides(e, {"--model", "convnext_atto", "--dims", "8,16"}, arch);
  } catch (const hg::Error& err) {
    msg = err.what();
  }
  expect_contains(msg, {"'depths' (convnext_atto's default (--model))", "'dims' (command line)"});
  EXPECT_EQ(msg.find(arch + " line 2"), std::string::npos) << msg;
}

// Keys alone on the defaults (`haargrad train --momentum 0 ...`, a bare state_dict): a key the
// command line left is "the default" (it read "the defaults or its default").
TEST_F(ConfigTest, AKeyTheCommandLineLeftOnTheDefaultsIsTheDefault) {
  Config c;
  std::string msg;
  try {
    hg::train::apply_overrides(c, {"--momentum", "0"}, "the defaults");
  } catch (const hg::Error& e) {
    msg = e.what();
  }
  expect_contains(msg, {"'opt' (the default)", "'momentum' (command line)"});
  EXPECT_EQ(msg.find("or its default"), std::string::npos) << msg;
}

TEST_F(ConfigTest, CommandLineOverrides) {
  Config c;
  hg::train::apply_overrides(c, {"--lr", "0.5", "--depths", "1,2,3", "--dims=[4, 8, 16]", "--wt-levels", "[1,1,1]",
                                 "--model-ema", "--clip-grad=1.5", "--model", "convnext_atto", "--validation_batch_size",
                                 "null", "--mean", "0.5", "--std", "[0.25]", "--in_chans", "1"});
  EXPECT_DOUBLE_EQ(c.lr.value(), 0.5);
  EXPECT_EQ(c.depths, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(c.dims, (std::vector<int64_t>{4, 8, 16}));
  EXPECT_EQ(c.wt_levels, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_TRUE(c.model_ema);
  EXPECT_EQ(c.clip_grad, std::optional<double>(1.5));
  EXPECT_EQ(c.model, "convnext_atto");
  EXPECT_FALSE(c.validation_batch_size.has_value());
  EXPECT_EQ(c.mean, (std::vector<double>{0.5}));
  EXPECT_EQ(c.in_chans, 1);
  hg::train::apply_overrides(c, {"--model-ema", "false"});
  EXPECT_FALSE(c.model_ema);
  // 1 and 0 as PyYAML and timm's train.py read them (an integer, taken by its truth)
  hg::train::apply_overrides(c,
                             {"--drop", "0.2"});  // timm's head dropout, into the model's drop_rate
  EXPECT_DOUBLE_EQ(hg::train::model_config_from(c).drop_rate, 0.2);
  expect_contains(override_error({"--drop", "1"}), {"'drop'", "[0, 1)"});
  hg::train::apply_overrides(c, {"--model-ema", "1"});
  EXPECT_TRUE(c.model_ema);
  hg::train::apply_overrides(c, {"--model-ema", "0"});
  EXPECT_FALSE(c.model_ema);
  hg::train::apply_overrides(c, {"--lr", "1e-3", "--lr=2e-3"});  // the last wins, as with argparse
  EXPECT_DOUBLE_EQ(c.lr.value(), 2e-3);
  Config gray;  // --in-chans 1 over ImageNet's RGB mean / std: one value each, their average
  hg::train::apply_overrides(gray, {"--in-chans", "1"});
  ASSERT_EQ(gray.mean.size(), 1u);
  EXPECT_NEAR(gray.mean[0], (0.485 + 0.456 + 0.406) / 3, 1e-12);
  EXPECT_NEAR(gray.std[0], (0.229 + 0.224 + 0.225) / 3, 1e-12);
  Config chosen;
  hg::train::apply_overrides(chosen, {"--in-chans", "1", "--mean", "0.3", "--std", "0.2"});
  EXPECT_EQ(chosen.mean, (std::vector<double>{0.3}));
  // `--mean null` is timm's None (the default), as `mean: null` in a file; it was read as a list
  // of one empty entry and refused
  Config reset;
  hg::train::apply_overrides(reset, {"--mean", "0.5", "--std", "0.5"});
  hg::train::apply_overrides(reset, {"--mean", "null", "--std=~"});
  EXPECT_EQ(reset.mean, Config{}.mean);
  EXPECT_EQ(reset.std, Config{}.std);
  // `--depths null` is the variant's depths, as an empty list (README); it was refused
  Config variant;
  hg::train::apply_overrides(variant, {"--depths", "1,2", "--dims", "8,16"});
  hg::train::apply_overrides(variant, {"--depths", "null", "--dims=~"});
  EXPECT_EQ(variant, Config{});

  expect_contains(override_error({"--dims", "48,,96"}),
                  {"'dims'", "command line", "empty entry (entry 2)"});
  expect_contains(override_error({"--lrr", "1"}), {"'lrr'", "command line", "did you mean 'lr'"});
  expect_contains(override_error({"--lr", "abc"}), {"'lr'", "command line", "'abc'"});
  expect_contains(override_error({"--lr", "-2"}), {"'lr'", "command line", ">= 0"});
  expect_contains(override_error({"--epochs"}), {"'epochs'", "command line", "value"});
  expect_contains(override_error({"lr", "1"}), {"command line", "'lr'"});
  expect_contains(override_error({"--depths", "1,2", "--dims", "4,8,16"}), {"'dims'", "'depths'", "command line"});
  for (const char* e : {"../..", "/tmp/x", ".", "a/../b", "a/./b", "x\ny", "tab\there"})
    expect_contains(override_error({"--experiment", e}),
                    {"'experiment'", "must name a folder inside output"});
  EXPECT_EQ(override_error({"--experiment", "sweep/lr-1e-3"}), "");
}

// A string key on the command line takes its text as typed. Read as YAML, "run #2" lost " #2" (a
// comment: the run went to output/run, a data_dir to another folder), and "a: b", "[v1] x" or
// "*x" were refused as a mapping, a list or an alias. YAML's null and a quoted value keep their
// YAML meaning.
// timm's scripts take -b (batch size), -vb (validation batch size) and -j (workers): they read
// as "expected '--key value' on the command line, got '-b'". They are their keys' short names; any
// other single-dash word is named with how keys are given.
TEST_F(ConfigTest, TimmsShortOptionsAreTheirKeys) {
  Config c;
  hg::train::apply_overrides(c, {"-b", "64", "-vb", "32", "-j", "2"});
  EXPECT_EQ(c.batch_size, 64);
  EXPECT_EQ(c.validation_batch_size, std::optional<int64_t>(32));
  EXPECT_EQ(c.workers, 2);
  expect_contains(override_error({"-b", "0"}), {"'batch_size'", ">= 1"});
  expect_contains(override_error({"-j"}), {"expected a value after -j"});
  expect_contains(override_error({"-x", "1"}), {"'-x'", "--key value", "-b"});
  // `train a.yaml b.yaml`: the second is named as what it looks like
  expect_contains(override_error({"b.yaml"}), {"got 'b.yaml'", "a second config?"});
}

// A list's separate words (`--scale 0.5 1.0`) and a bare flag (`--model-ema`) ended at the next
// word starting with "--" only: timm's short options after them were read as a value ("expected
// a list of numbers, got '-b'"). argparse ends them at any option.
TEST_F(ConfigTest, TimmsShortOptionsEndAListOrABareFlag) {
  Config c;
  hg::train::apply_overrides(c, {"--scale", "0.5", "1.0", "-b", "4", "--model-ema", "-j", "1",
                                 "--mean", "-0.5", "-vb", "8"});
  EXPECT_EQ(c.scale, (std::vector<double>{0.5, 1.0}));
  EXPECT_EQ(c.batch_size, 4);
  EXPECT_TRUE(c.model_ema);
  EXPECT_EQ(c.workers, 1);
  EXPECT_EQ(c.mean, (std::vector<double>{-0.5, -0.5, -0.5}));  // a negative number is a value
  EXPECT_EQ(c.validation_batch_size, std::optional<int64_t>(8));
  expect_contains(override_error({"--lr", "-b", "4"}),
                  {"'lr'", "expected a value after --lr, got the option -b"});
}

// A config file gives timm's train.py the defaults its command line replaces: the file's values
// of the keys the command line sets were checked (`opt: lamb` beside --opt adamw was refused), and
// so were the checks between keys before the command line (a file's `opt: sgd` with `momentum: 0`
// beside --momentum 0.9). The result is what is checked, where a key left as the file set it is
// still named at its line.
TEST_F(ConfigTest, TheCommandLineReplacesAFilesValuesBeforeTheyAreChecked) {
  const std::string sgd = write("sgd.yaml", "opt: sgd\nmomentum: 0\nepochs: 0\n");
  const Config c =
      hg::train::load_config_with_overrides(sgd, {"--momentum", "0.9", "--epochs", "2"});
  EXPECT_EQ(c.opt, "sgd");
  EXPECT_EQ(c.momentum, 0.9);
  EXPECT_EQ(c.epochs, 2);
  const std::string lamb = write("lamb.yaml", "opt: lamb\nsched: wsd\nlr: 0.01\n");
  const Config d =
      hg::train::load_config_with_overrides(lamb, {"--opt", "adamw", "--sched=cosine"});
  EXPECT_EQ(d.opt, "adamw");
  EXPECT_EQ(d.sched, "cosine");
  EXPECT_EQ(d.lr, std::optional<double>(0.01));  // the rest of the file stays
  // a key the command line leaves is checked, at its line in the file
  std::string msg;
  try {
    hg::train::load_config_with_overrides(lamb, {"--opt", "adamw"});
  } catch (const hg::Error& e) {
    msg = e.what();
  }
  expect_contains(msg, {"'sched'", "lamb.yaml line 2", "wsd"});
  // and a file alone, as before
  expect_contains(load_error("opt: sgd\nmomentum: 0\n"), {"'opt'", "'momentum'"});
  // a key timm's input_size gave is named at its line (the file is not read again for it)
  const std::string gray = write("gray.yaml", "lr: 0.01\ninput_size: [1, 32, 32]\n");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{}, std::vector<std::string>{"--lr", "0.1"}}) {
    std::string err;
    try {
      hg::train::load_config_with_overrides(gray, args);
    } catch (const hg::Error& e) {
      err = e.what();
    }
    expect_contains(err, {"'in_chans' (" + gray + " line 2)"});
  }
}

// timm's img_size None (or none given) is the model's own input size; it was 224 whatever the
// model, so wtconvnext_fmnist without an img_size trained at 224 px. A size a config file gives
// stays whatever --model says.
TEST_F(ConfigTest, AnUnsetImgSizeIsTheModelsOwn) {
  using hg::train::load_config;
  using hg::train::load_config_with_overrides;
  EXPECT_EQ(load_config(write("a.yaml", "model: wtconvnext_fmnist\n")).img_size, 28);
  EXPECT_EQ(load_config(write("b.yaml", "model: wtconvnext_fmnist\nimg_size: null\n")).img_size,
            28);
  EXPECT_EQ(load_config(write("c.yaml", "model: convnext_atto\n")).img_size, 224);
  const std::string fm = write("fm.yaml", "model: wtconvnext_fmnist\nimg_size: 28\n");
  std::string err;  // a size the file gives stays: too small for convnext_tiny, said so
  try {
    load_config_with_overrides(fm, {"--model", "convnext_tiny"});
  } catch (const hg::Error& e) {
    err = e.what();
  }
  expect_contains(err, {"img_size 28 is below the total stride 32"});
  EXPECT_EQ(load_config_with_overrides(write("no.yaml", "model: wtconvnext_fmnist\n"),
                                       {"--model", "convnext_tiny"})
                .img_size,
            224);
  EXPECT_EQ(
      load_config_with_overrides(fm, {"--model", "convnext_atto", "--img-size", "64"}).img_size,
      64);
  const std::string small = write("s.yaml", "model: wtconvnext_fmnist\nimg_size: 64\n");
  EXPECT_EQ(load_config_with_overrides(small, {"--model", "convnext_atto"}).img_size, 64);
  Config d;  // no config: timm's defaults
  hg::train::apply_overrides(d, {"--model", "wtconvnext_fmnist"}, hg::train::kDefaults);
  EXPECT_EQ(d.img_size, 28);
  Config e;
  hg::train::apply_overrides(e, {"--model", "wtconvnext_fmnist", "--img-size", "null"});
  EXPECT_EQ(e.img_size, 28);
}

// crop_pct not given, or timm's None, is the model's own as timm's pretrained config gives it
// (resolve_data_config): 0.95 for convnext_tiny's default weights, 0.875 for a WTConvNeXt (timm's
// default: the reference registers none). It was 0.875 for every model.
TEST_F(ConfigTest, AnUnsetCropPctIsTheModelsOwn) {
  using hg::train::load_config;
  using hg::train::load_config_with_overrides;
  EXPECT_EQ(load_config(write("t.yaml", "model: convnext_tiny\n")).crop_pct, 0.95);
  EXPECT_EQ(load_config(write("tn.yaml", "model: convnext_tiny\ncrop_pct: null\n")).crop_pct, 0.95);
  EXPECT_EQ(load_config(write("a.yaml", "model: convnext_atto\n")).crop_pct, 0.875);
  EXPECT_EQ(load_config(write("w.yaml", "model: wtconvnext_tiny\n")).crop_pct, 0.875);
  EXPECT_EQ(load_config(write("f.yaml", "model: wtconvnext_fmnist\n")).crop_pct, 1.0);
  // a value the file gives stays, whatever the model
  const std::string given = write("g.yaml", "model: convnext_tiny\ncrop_pct: 0.875\n");
  EXPECT_EQ(load_config(given).crop_pct, 0.875);
  EXPECT_EQ(load_config_with_overrides(given, {"--model", "convnext_small"}).crop_pct, 0.875);
  // not given in the file: the model the command line names
  EXPECT_EQ(load_config_with_overrides(write("n.yaml", "model: convnext_atto\n"),
                                       {"--model", "convnext_small"})
                .crop_pct,
            0.95);
  EXPECT_EQ(load_config_with_overrides(given, {"--crop-pct", "null"}).crop_pct, 0.95);
  // whether the value is the model's (a resume then keeps its run's: Faults tests)
  EXPECT_TRUE(load_config(write("t2.yaml", "model: convnext_tiny\n")).model_own.crop_pct);
  EXPECT_FALSE(load_config(given).model_own.crop_pct);
  EXPECT_FALSE(
      load_config_with_overrides(write("t3.yaml", "model: convnext_tiny\n"), {"--crop-pct", "0.9"})
          .model_own.crop_pct);
  EXPECT_TRUE(load_config_with_overrides(given, {"--crop-pct", "null"}).model_own.crop_pct);
  Config d;  // no config: timm's defaults
  hg::train::apply_overrides(d, {"--model", "wtconvnext_tiny"}, hg::train::kDefaults);
  EXPECT_EQ(d.crop_pct, 0.875);
  Config e;
  hg::train::apply_overrides(e, {"--model", "convnext_tiny"}, hg::train::kDefaults);
  EXPECT_EQ(e.crop_pct, 0.95);
}

// A key whose value was left out took the next option as its value: "--data-dir --epochs 1" set
// data_dir to "--epochs" and then called the 1 a stray word ("expected '--key value', got '1'").
// The next word naming a key is no value: the key without one is named, as argparse does.
TEST_F(ConfigTest, AKeyFollowedByAnotherKeyHasNoValue) {
  expect_contains(override_error({"--data-dir", "--epochs", "1"}),
                  {"'data_dir'", "expected a value after --data-dir", "got the option --epochs"});
  expect_contains(override_error({"--experiment", "--lr=0.1"}),
                  {"'experiment'", "got the option --lr=0.1"});
  // a bool key alone still means true before another key
  Config c;
  hg::train::apply_overrides(c, {"--model-ema", "--epochs", "3"});
  EXPECT_TRUE(c.model_ema);
  EXPECT_EQ(c.epochs, 3);
  // a value that only looks like an option (no such key) is taken as typed
  hg::train::apply_overrides(c, {"--experiment", "--not-a-key"});
  EXPECT_EQ(c.experiment, "--not-a-key");
}

TEST_F(ConfigTest, CommandLineStringValuesAreTakenAsTyped) {
  Config c;
  hg::train::apply_overrides(
      c, {"--experiment", "run #2", "--data-dir", "/data/set #2: v1", "--output", "[v1] runs",
          "--initial-checkpoint", "*w.safetensors", "--train-split", "train, all"});
  EXPECT_EQ(c.experiment, "run #2");
  EXPECT_EQ(c.data_dir, "/data/set #2: v1");
  EXPECT_EQ(c.output, "[v1] runs");
  EXPECT_EQ(c.initial_checkpoint, "*w.safetensors");
  EXPECT_EQ(c.train_split, "train, all");
  hg::train::apply_overrides(c, {"--experiment", "\"run #3\"", "--output", "null", "--data-dir="});
  EXPECT_EQ(c.experiment, "run #3");
  EXPECT_EQ(c.output, "");
  EXPECT_EQ(c.data_dir, "");
  hg::train::apply_overrides(c, {"--dataset", "synthetic", "--interpolation", "null"});
  EXPECT_EQ(c.dataset, "synthetic");
  EXPECT_EQ(c.interpolation, Config{}.interpolation);  // timm's None: the default
  expect_contains(override_error({"--opt", "adamw # the default"}),
                  {"'opt'", "command line", "'adamw # the default'"});
}

// The model keys become C++ ints: a value past 2^31 - 1 wrapped around (dims 4294967304 built a
// width-8 stage while args.yaml recorded 4294967304; num_classes 4294967300 built 4 outputs).
TEST_F(ConfigTest, ModelSizesBeyondIntAreRefused) {
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"num_classes", "4294967300"},
                                                        {"img_size", "4294967328"},
                                                        {"dims", "[4294967304, 16]"},
                                                        {"depths", "[4294967297, 1]"},
                                                        {"patch_size", "4294967298"},
                                                        {"kernel_size", "4294967299"}})
    expect_contains(load_error("model: wtconvnext_fmnist\n" + key + ": " + value + "\n"),
                    {"'" + key + "'", path_, "line 2", "2147483647"});
  EXPECT_EQ(load_error("model: wtconvnext_fmnist\nnum_classes: 100000\ndims: [64, 128]\n"), "");
}

// A config file's architecture keys were written for its model: a --model that replaces it builds
// that variant's own architecture, unless the keys are given on the command line too.
TEST_F(ConfigTest, AnotherModelOnTheCommandLineTakesItsOwnArchitecture) {
  const fs::path file = fs::path(HAARGRAD_SOURCE_DIR) / "configs" / "convnext_tiny.yaml";
  Config c = hg::train::load_config(file.string());
  ASSERT_EQ(c.depths, (std::vector<int64_t>{3, 3, 9, 3}));
  hg::train::apply_overrides(c, {"--model", "convnext_atto"});
  EXPECT_EQ(hg::train::model_config_from(c).depths, (std::vector<int>{2, 2, 6, 2}));
  EXPECT_EQ(hg::train::model_config_from(c).dims, (std::vector<int>{40, 80, 160, 320}));
  Config w = hg::train::load_config(file.string());
  hg::train::apply_overrides(w, {"--model", "wtconvnext_tiny"});
  EXPECT_EQ(hg::train::model_config_from(w).kernel_size, 5);  // the reference's, not the file's 7
  Config kept = hg::train::load_config(file.string());
  hg::train::apply_overrides(kept, {"--model", "convnext_atto", "--depths", "1,1,1,1"});
  EXPECT_EQ(hg::train::model_config_from(kept).depths, (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ(hg::train::model_config_from(kept).dims, (std::vector<int>{40, 80, 160, 320}));
  Config same = hg::train::load_config(file.string());  // the same model: the file's keys stay
  hg::train::apply_overrides(same, {"--model", "convnext_tiny", "--kernel-size", "5"});
  EXPECT_EQ(same.depths, (std::vector<int64_t>{3, 3, 9, 3}));
}

// An unknown --model over a config's model first said that it "replaces" the config's model and
// that the file's depths, dims, ... give way to its own, then failed. The name is checked first:
// the error names it and the known models, and nothing is said about replacing.
TEST_F(ConfigTest, AnUnknownModelOnTheCommandLineIsNamedBeforeAnythingReplacesIt) {
  const fs::path file = fs::path(HAARGRAD_SOURCE_DIR) / "configs" / "fashion_mnist.yaml";
  Config c = hg::train::load_config(file.string());
  hg::test::CapturedLog log;
  std::string msg;
  try {
    hg::train::apply_overrides(c, {"--model", "wtconvnext_fmnsit"});
  } catch (const hg::Error& e) {
    msg = e.what();
  }
  expect_contains(msg, {"'model'", "command line", "unknown model 'wtconvnext_fmnsit'",
                        "did you mean 'wtconvnext_fmnist'", "known models: ", "convnext_atto"});
  EXPECT_EQ(log.text().find("replaces"), std::string::npos) << log.text();
}

TEST(ConfigKeys, SuggestionsAreCloseMatchesOnly) {
  using hg::train::similar_keys;
  EXPECT_EQ(similar_keys("lrr"), std::vector<std::string>{"lr"});
  EXPECT_EQ(similar_keys("wieght_decay"), std::vector<std::string>{"weight_decay"});
  EXPECT_EQ(similar_keys("epoch").at(0), "epochs");
  EXPECT_EQ(similar_keys("batchsize").at(0), "batch_size");
  // timm train.py keys haargrad does not have: nothing close, so no suggestion
  for (const char* k : {"amp", "zz", "jsd_loss", "bce_loss", "drop_path_rate", "x"})
    EXPECT_TRUE(similar_keys(k).empty()) << k << " -> " << similar_keys(k).at(0);
  expect_contains(override_error({"--amp", "true"}), {"unknown key 'amp'", "haargrad train --help"});
  EXPECT_EQ(override_error({"--amp", "true"}).find("did you mean"), std::string::npos);
  EXPECT_TRUE(similar_keys("aa").empty() || similar_keys("aa").at(0) == "aa");  // a key now: never "lr"
}

TEST(ConfigKeys, EveryKeyHasTypeDefaultAndHelp) {
  const auto docs = hg::train::config_key_docs();
  ASSERT_EQ(docs.size(), hg::train::config_keys().size());
  for (const auto& d : docs) {
    EXPECT_FALSE(d.help.empty()) << d.key;
    EXPECT_FALSE(d.type.empty()) << d.key;
    EXPECT_FALSE(d.default_value.empty()) << d.key;
    // the default shown is the one a config without the key gets
    hg::train::Config from_default = hg::train::config_from_yaml(d.key + ": " + d.default_value + "\n", "doc");
    EXPECT_EQ(from_default, Config{}) << d.key;
  }
}

TEST(ConfigKeys, ThreadsKey) {
  Config c;
  EXPECT_EQ(c.threads, 0);  // the cores available
  hg::train::apply_overrides(c, {"--threads", "3"});
  EXPECT_EQ(c.threads, 3);
  expect_contains(override_error({"--threads", "-1"}), {"'threads'", "[0, 4096]"});
}

TEST_F(ConfigTest, ArgsYamlRoundTrip) {
  Config c;
  c.model = "wtconvnext_atto";
  c.data_dir = "wtconvnext \"odd\": #name\\\nline2";  // quoting, escapes, newlines survive
  c.output = "";
  c.experiment = "sweep/odd: \"#1\"";
  c.lr = 1.0 / 3.0;  // needs all 17 digits
  c.weight_decay = 1e-300;
  c.clip_grad = 0.1 + 0.2;
  c.validation_batch_size = 7;
  c.depths = {2, 2};
  c.dims = {3, 5};
  c.wt_levels = {1, 4};
  c.patch_size = 2;
  c.in_chans = 1;
  c.mean = {0.123456789012345678};
  c.std = {0.9};
  c.scale = {0.3, 0.7};
  c.model_ema = true;
  c.sched_on_updates = true;
  c.seed = 123456789012345;
  c.ls_init_value = std::nullopt;
  c.head_init_scale = 0.001;
  c.head_init_bias = -6.907755278982137;  // -log(1000)
  c.no_resume_opt = true;
  c.start_epoch = 4;
  c.recovery_interval = 250;
  c.schedule_history = {{3, 0, 10, 0.25, "cosine", 2, 1e-5, 0.0, false}, {5, 7, 12, 1.0 / 3.0, "none", 0, 0.0, 0.0, true}};
  ASSERT_NE(c, Config{});
  const std::string path = (dir_ / "args.yaml").string();
  hg::train::save_config(c, path);
  Config back = hg::train::load_config(path);
  EXPECT_EQ(back, c) << hg::train::to_yaml(back) << "\nvs\n" << hg::train::to_yaml(c);
  EXPECT_EQ(hg::train::config_from_yaml(hg::train::to_yaml(Config{}), "defaults"), Config{});
}

TEST_F(ConfigTest, ShippedConfigsLoad) {
  const fs::path configs = fs::path(HAARGRAD_SOURCE_DIR) / "configs";
  int loaded = 0;
  for (const auto& e : fs::directory_iterator(configs)) {
    if (e.path().extension() != ".yaml") continue;
    SCOPED_TRACE(e.path().string());
    EXPECT_NO_THROW(hg::train::load_config(e.path().string()));
    ++loaded;
  }
  EXPECT_GE(loaded, 4);
  Config fm = hg::train::load_config((configs / "fashion_mnist.yaml").string());
  EXPECT_EQ(fm.dataset, "idx");
  EXPECT_EQ(fm.img_size, 28);
  EXPECT_EQ(fm.in_chans, 1);
  EXPECT_EQ(fm.device, "auto");
  Config wt = hg::train::load_config((configs / "wtconvnext_tiny.yaml").string());
  EXPECT_EQ(wt.batch_size * wt.grad_accum_steps, 4096);
  EXPECT_DOUBLE_EQ(wt.lr.value(), 4e-3);
  EXPECT_EQ(wt.epochs, 300);
  EXPECT_EQ(wt.warmup_epochs, 20);
  Config smoke = hg::train::load_config((configs / "smoke.yaml").string());
  EXPECT_EQ(smoke.dataset, "synthetic");
  EXPECT_EQ(smoke.epochs, 2);
  EXPECT_GT(smoke.max_steps_per_epoch, 0);
}

// A leading '~' in a path key (output, data_dir, initial_checkpoint, resume) is the home folder,
// as a shell would read it: `output: "~/runs"` used to make a folder named '~' in the current one.
// YAML's bare `~` stays null (the key's default); a '~' elsewhere in a path stays as written.
TEST_F(ConfigTest, ALeadingTildeInAPathKeyIsTheHomeFolder) {
  const std::string home = (dir_ / "home").string();
  const char* saved = std::getenv("HOME");
  const std::string before = saved ? saved : "";
  ::setenv("HOME", home.c_str(), 1);
  Config c = hg::train::load_config(write("a.yaml",
                                          "output: \"~/runs\"\n"
                                          "data_dir: ~/data\n"
                                          "initial_checkpoint: '~/w.safetensors'\n"
                                          "resume: ~/runs/x/last.safetensors\n"
                                          "experiment: a~b\n"));
  EXPECT_EQ(c.output, home + "/runs");
  EXPECT_EQ(c.data_dir, home + "/data");
  EXPECT_EQ(c.initial_checkpoint, home + "/w.safetensors");
  EXPECT_EQ(c.resume, home + "/runs/x/last.safetensors");
  EXPECT_EQ(c.experiment, "a~b");
  EXPECT_EQ(hg::train::load_config(write("b.yaml", "output: \"~\"\n")).output, home);
  EXPECT_EQ(hg::train::load_config(write("c.yaml", "output: ~\n")).output, Config{}.output);
  EXPECT_EQ(hg::train::load_config(write("d.yaml", "data_dir: data/~/x\n")).data_dir, "data/~/x");
  Config o;
  hg::train::apply_overrides(o, {"--output", "~/o", "--data-dir=~/d", "--resume", "auto"});
  EXPECT_EQ(o.output, home + "/o");
  EXPECT_EQ(o.data_dir, home + "/d");
  EXPECT_EQ(o.resume, "auto");
  if (const passwd* root = ::getpwnam("root")) {  // ~user: that user's home folder
    EXPECT_EQ(hg::train::load_config(write("e.yaml", "output: ~root/r\n")).output,
              std::string(root->pw_dir) + "/r");
  }
  EXPECT_EQ(hg::train::load_config(write("f.yaml", "output: ~no_such_user_x/r\n")).output,
            "~no_such_user_x/r");  // as the shell leaves it
  ::unsetenv("HOME");              // the home folder of the user then, as a shell's
  if (const passwd* me = ::getpwuid(::geteuid())) {
    EXPECT_EQ(hg::train::load_config(write("g.yaml", "output: ~/r\n")).output,
              std::string(me->pw_dir) + "/r");
  }
  if (saved) ::setenv("HOME", before.c_str(), 1);
}

// A YAML syntax error named the line where yaml-cpp stopped, which for a key without ':' or an
// unclosed '[' is the line after the mistake (a new user's report: "one line late"). yaml-cpp's
// mark is 0-based, and right where it finds the error on its own line; those two name the line
// to fix, and where yaml-cpp stopped.
TEST_F(ConfigTest, ASyntaxErrorNamesTheLineOfTheMistake) {
  const std::string model = "model: wtconvnext_fmnist\n";
  const std::string at = "config: cannot parse " + (dir_ / "c.yaml").string();  // load_error's file
  // found on the line of the mistake: an indented key under a scalar, a ']' with no '['
  expect_contains(load_error(model + "  lr: 0.1\nepochs: 2\n"),
                  {at + " line 2: illegal map value"});
  expect_contains(load_error(model + "lr: ]\nepochs: 2\n"), {at + " line 2: illegal flow end"});
  // found a line later (blank lines between or not)
  for (const std::string& gap : {std::string(), std::string("\n")})
    expect_contains(
        load_error(model + "lr 0.1\n" + gap + "epochs: 2\n"),
        {at + " line 2: 'lr 0.1' has no ':' after its key",
         std::string("('illegal map value' at line ") + (gap.empty() ? "3" : "4") + ")"});
  expect_contains(load_error(model + "depths: [1, 2\nepochs: 2\n"),
                  {at + " line 2: the '[' there is not closed",
                   "('end of sequence flow not found' at line 3)"});
  // an indented line without ':': yaml-cpp reads it as the rest of the value above (the model
  // 'wtconvnext_fmnist lr 0.1', refused as an unknown model)
  expect_contains(load_error(model + "  lr 0.1\n"),
                  {at + " line 2: 'lr 0.1' has no ':' after its key, so YAML reads it as the rest "
                        "of the value on line 1 ('wtconvnext_fmnist lr 0.1')"});
  expect_contains(load_error("epochs: 2\n" + model + "\n  lr 0.1\n"),
                  {at + " line 4: 'lr 0.1' has no ':' after its key",
                   "value on line 2 ('wtconvnext_fmnist lr 0.1')"});
  // a long value folded over lines (PyYAML wraps at 80 columns) is valid: read whole
  EXPECT_EQ(hg::train::load_config(
                write("folded.yaml", "experiment: a run whose name is long\n  and folded\n"))
                .experiment,
            "a run whose name is long and folded");
  // brackets in a comment, in a plain scalar and closed ones do not count
  expect_contains(load_error("model: a[1]  # [x\nmean: {r: [1], g: 2\n\nepochs: 2\n"),
                  {at + " line 2: the '{' there is not closed"});
}

// Lists nested past yaml-cpp's depth limit (a generated or damaged file) were reported as
// "cannot parse c.yaml line 1: bad file", yaml-cpp's words for its recursion guard: the file is
// not bad, its nesting is too deep, which is said.
TEST_F(ConfigTest, NestingPastTheParsersLimitIsNamedAsSuch) {
  const std::string deep = "epochs: " + std::string(1000, '[') + std::string(1000, ']') + "\n";
  const std::string msg = load_error("model: wtconvnext_fmnist\n" + deep);
  expect_contains(
      msg, {"config: cannot parse " + (dir_ / "c.yaml").string() + " line 2", "nested too deeply"});
  EXPECT_EQ(msg.find("bad file"), std::string::npos) << msg;
  // the same value on the command line
  const std::string cli =
      override_error({"--depths", std::string(1000, '[') + std::string(1000, ']')});
  expect_contains(cli, {"'depths'", "command line", "nested too deeply"});
  EXPECT_EQ(cli.find("bad file"), std::string::npos) << cli;
}

// A binary file given as the config (an image, a PyTorch model.pth) was reported as a YAML syntax
// error ("cannot parse ... line 3: unknown escape character"): it is named as no text file.
TEST_F(ConfigTest, ABinaryFileIsNamedAsNoYamlText) {
  const std::string png =
      write("curves.png", std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\x01\0", 20));
  const std::string pth =
      write("model.pth", std::string("PK\x03\x04\x14\0\0\0\0\0archive/data.pkl", 30));
  for (const std::string& path : {png, pth}) {
    std::string msg;
    try {
      hg::train::load_config(path);
    } catch (const hg::Error& e) {
      msg = e.what();
    }
    expect_contains(msg, {"config: '" + path + "' is not a YAML text file (it holds NUL bytes"});
  }
  // UTF-16 text (with its byte order mark) is YAML still
  const std::string utf16 = write("u16.yaml", std::string("\xff\xfe"
                                                          "e\0p\0o\0c\0h\0s\0:\0 \0"
                                                          "3\0\n\0",
                                                          22));
  EXPECT_EQ(hg::train::load_config(utf16).epochs, 3);
}

// The config was read whole before any check: `haargrad train /dev/zero` took 24 GB until the
// kernel killed it, and a dataset archive given as the config was read into memory to the end
// before "it holds NUL bytes". A config is a few KiB: a file larger than 1 MiB is refused after
// reading that much, naming the file and its size.
TEST_F(ConfigTest, AFileFarLargerThanAConfigIsRefusedWithoutReadingItWhole) {
  const size_t max = size_t{1} << 20;
  std::string text = "epochs: 3\n";
  while (text.size() <= max) text += "# a comment line of the kind a config holds a few of\n";
  const std::string big = write("big.yaml", text);
  std::string msg;
  try {
    hg::train::load_config(big);
  } catch (const hg::Error& e) {
    msg = e.what();
  }
  std::string want = "config: '";
  want += big;
  want += "' is ";
  want += std::to_string(text.size());
  want += " bytes";
  expect_contains(msg, {want, "not a config"});
  // the same lines up to the limit load
  text.resize(text.rfind('\n', max - 1) + 1);
  EXPECT_EQ(hg::train::load_config(write("fits.yaml", text)).epochs, 3);
  // an endless source (`haargrad train <(generator)`, /dev/zero) is read no further than that
  const std::string fifo = (dir_ / "endless.yaml").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto old_pipe = std::signal(SIGPIPE, SIG_IGN);  // the reader's close: EPIPE, not a kill
  size_t written = 0;
  std::thread writer([&] {
    int fd = -1;
    for (int i = 0; i < 1000 && fd < 0; ++i) {  // no reader yet: ENXIO (10 s at most)
      fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (fd < 0) return;
    fcntl(fd, F_SETFL, 0);  // blocking writes from here on
    const std::string chunk(1 << 16, '#');
    while (written < (size_t{256} << 20)) {
      const ssize_t n = ::write(fd, chunk.data(), chunk.size());
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
    ::close(fd);
  });
  msg.clear();
  try {
    hg::train::load_config(fifo);
  } catch (const hg::Error& e) {
    msg = e.what();
  }
  writer.join();
  std::signal(SIGPIPE, old_pipe);
  want = "config: '";
  want += fifo;
  want += "' holds more than ";
  want += std::to_string(max);
  want += " bytes";
  expect_contains(msg, {want, "not a config"});
  EXPECT_LT(written, size_t{16} << 20);
}

// A folded block scalar (`model: >` over an indented name) is YAML for the name with a line break
// at its end, which sat inside the message ("unknown model 'convnext_tiny<newline>'"). A name (the
// model, a choice, a spec) with a line break is refused as it is read, naming the key, file and
// line, with the break written as \n; the name on the key's line (or `>-`) loads, and a path
// keeps its line breaks as before (a file name may hold one).
TEST_F(ConfigTest, ANameWithALineBreakIsNamedWithItsKey) {
  const std::string folded = load_error("epochs: 1\nmodel: >\n  convnext_tiny\n");
  expect_contains(folded, {"config: key 'model' (" + path_ + " line 2)",
                           "expected a name on one line, got \"convnext_tiny\\n\"",
                           "write the value on the key's line, or use '>-'"});
  EXPECT_EQ(folded.find("convnext_tiny\n"), std::string::npos) << folded;
  expect_contains(load_error("sched: |\n  cosine\n  none\n"),
                  {"key 'sched'", "got \"cosine\\nnone\\n\""});
  expect_contains(override_error({"--opt", "adamw\n"}), {"key 'opt'", "\"adamw\\n\""});
  EXPECT_EQ(load_error("model: >-\n  convnext_tiny\n"), "");
  EXPECT_EQ(hg::train::config_from_yaml("data_dir: |\n  /data\n", "x.yaml").data_dir, "/data\n");
}

// An unknown key or a value of fixed choices holding a byte that is not UTF-8 (a Latin-1 "k\xe9y")
// was named with that raw byte: the terminal showed '?' in its place, and the message, itself no
// longer UTF-8 text, made grep call the log binary. It is written as \xHH, as a path's bytes are.
TEST_F(ConfigTest, AKeyOrChoiceThatIsNotUtf8IsShownWithItsBytesEscaped) {
  const std::string one = load_error("model: wtconvnext_fmnist\nk\xe9y: 4\n");
  expect_contains(one, {"unknown key 'k\\xe9y'"});
  EXPECT_EQ(hg::invalid_utf8_at(one), std::string::npos) << one;
  const std::string two = load_error("k\xe9y: 4\nfoo\xff: 5\n");
  expect_contains(two, {"'k\\xe9y' (line 1", "'foo\\xff' (line 2"});
  EXPECT_EQ(hg::invalid_utf8_at(two), std::string::npos) << two;
  const std::string choice = load_error("device: cp\xe9\n");
  expect_contains(choice, {"key 'device'", "got 'cp\\xe9'"});
  EXPECT_EQ(hg::invalid_utf8_at(choice), std::string::npos) << choice;
}

// A path that is not UTF-8 (a Latin-1 folder name, "caf\xe9") trained a whole epoch and then
// failed its first checkpoint with "[json.exception.type_error.316] invalid UTF-8 byte ... (an
// unexpected C++ exception: please report it)": every checkpoint records the config in its JSON
// header, which holds UTF-8 only. A training run names the key first (trainer: train() calls
// check_utf8_strings); commands that record no config (validate, infer) still take the path.
TEST_F(ConfigTest, AStringThatIsNotUtf8IsNamedWithItsKeyForATrainingRun) {
  const auto utf8_error = [](const Config& c) {
    try {
      hg::train::check_utf8_strings(c);
    } catch (const hg::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Config c;
  hg::train::apply_overrides(c, {"--output", "/tmp/caf\xe9/runs"});  // loads: validate takes it
  expect_contains(utf8_error(c), {"config: key 'output' is '/tmp/caf\\xe9/runs', not UTF-8 text"});
  const Config y = hg::train::load_config(write("c.yaml", "data_dir: \"/data/caf\xe9\"\n"));
  expect_contains(utf8_error(y), {"key 'data_dir' is '/data/caf\\xe9'"});
  // UTF-8 beyond ASCII is taken as it is
  EXPECT_EQ(utf8_error(hg::train::config_from_yaml("data_dir: /data/caf\xc3\xa9\n", "x.yaml")), "");
}

// A string that is not UTF-8 was always taken for a file's name: "rename the file or folder in
// UTF-8 (e.g. `convmv ...`)" also for `experiment`, `model` or `aa`, which name nothing on disk
// (or a folder yet to be made). Those are refused where they are read, naming the file and line
// (or the command line) whose text to fix; the keys that name a file or folder (data_dir, output,
// the splits, ...) keep the advice to rename it.
TEST_F(ConfigTest, AStringThatIsNotUtf8GetsAdviceThatFitsItsKey) {
  const std::string in_file = load_error("epochs: 1\nexperiment: \"caf\xe9\"\n");
  expect_contains(in_file,
                  {"config: key 'experiment' (" + path_ + " line 2): 'caf\\xe9' is not UTF-8 text",
                   "write the value in UTF-8 on line 2 of " + path_});
  EXPECT_EQ(in_file.find("rename"), std::string::npos) << in_file;
  expect_contains(load_error("model: wtconvnext_\xe9\n"),
                  {"key 'model' (" + path_ + " line 1): 'wtconvnext_\\xe9' is not UTF-8 text"});
  const std::string typed = override_error({"--aa", "rand-m9\xe9"});
  expect_contains(typed, {"config: key 'aa' (command line): 'rand-m9\\xe9' is not UTF-8 text",
                          "give the value in UTF-8 on the command line"});
  EXPECT_EQ(typed.find("rename"), std::string::npos) << typed;
  const auto utf8_error = [](const Config& c) {
    try {
      hg::train::check_utf8_strings(c);
    } catch (const hg::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Config set;  // set in code, so with no line: still no renaming
  set.experiment = "caf\xe9";
  const std::string no_line = utf8_error(set);
  expect_contains(no_line,
                  {"key 'experiment' is 'caf\\xe9', not UTF-8 text", "write the value in UTF-8"});
  EXPECT_EQ(no_line.find("rename"), std::string::npos) << no_line;
  // a folder keeps its advice, as a path does
  for (const std::string key : {"data_dir", "val_split", "output"}) {
    SCOPED_TRACE(key);
    const Config c = hg::train::load_config(write(key + ".yaml", key + ": \"caf\xe9\"\n"));
    expect_contains(utf8_error(c),
                    {"key '" + key + "' is 'caf\\xe9'", "rename the file or folder"});
  }
}

// timm's `--val-split ''` (and an args.yaml's `val_split: ''` or null) is "no validation": the
// empty value is kept, on the command line too, through args.yaml, and `train --help` says what it
// means (the trainer refused it).
TEST_F(ConfigTest, AnEmptyValSplitMeansNoValidation) {
  Config from_file = hg::train::load_config(write("noval.yaml", "val_split: ''\n"));
  EXPECT_EQ(from_file.val_split, "");
  EXPECT_FALSE(hg::train::has_validation(from_file));
  EXPECT_EQ(hg::train::load_config(write("null.yaml", "val_split: null\n")).val_split, "");
  Config from_line;
  hg::train::apply_overrides(from_line, {"--val-split", ""});
  EXPECT_EQ(from_line, from_file);
  EXPECT_EQ(hg::train::config_from_yaml(hg::train::to_yaml(from_line), "args.yaml"), from_line);
  EXPECT_TRUE(hg::train::has_validation(Config{}));  // timm's default, 'validation'
  for (const auto& d : hg::train::config_key_docs()) {
    if (d.key != "val_split") continue;
    EXPECT_NE(d.help.find("'' = no validation"), std::string::npos) << d.help;
  }
}

// timm's other schedules and their keys, at train.py's defaults: a ResNet recipe's `--sched step
// --decay-epochs 30 --decay-rate 0.1` was refused. decay_epochs is a float, as timm's (its
// args.yaml writes 30.0); decay_milestones takes argparse's separate words.
TEST_F(ConfigTest, TimmsStepAndMultistepKeys) {
  const Config d;
  EXPECT_EQ(d.decay_epochs, 90);
  EXPECT_EQ(d.decay_milestones, (std::vector<int64_t>{90, 180, 270}));
  EXPECT_EQ(d.decay_rate, 0.1);
  EXPECT_FALSE(d.warmup_prefix);
  EXPECT_EQ(d.cooldown_epochs, 0);
  Config c;
  hg::train::apply_overrides(c, {"--sched", "step", "--decay-epochs", "30", "--decay-rate", "0.1"});
  EXPECT_EQ(c.sched, "step");
  EXPECT_EQ(c.decay_epochs, 30);
  hg::train::apply_overrides(c, {"--sched", "multistep", "--decay-milestones", "30", "60"});
  EXPECT_EQ(c.decay_milestones, (std::vector<int64_t>{30, 60}));
  const Config f = hg::train::load_config(
      write("r.yaml", "sched: poly\ndecay_epochs: 2.5\ndecay_rate: 0.9\ndecay_milestones: []\n"));
  EXPECT_EQ(f.sched, "poly");
  EXPECT_EQ(f.decay_epochs, 2.5);
  EXPECT_TRUE(f.decay_milestones.empty());
  EXPECT_EQ(hg::train::config_from_yaml(hg::train::to_yaml(f), "args.yaml"), f);
  for (const char* s : {"cosine", "tanh", "poly", "step", "multistep", "none"})
    EXPECT_EQ(load_error(std::string("sched: ") + s + "\n"), "") << s;
  const std::vector<hg::train::KeyDoc> docs = hg::train::config_key_docs();
  const auto milestones = std::find_if(docs.begin(), docs.end(), [](const hg::train::KeyDoc& doc) {
    return doc.key == "decay_milestones";
  });
  ASSERT_NE(milestones, docs.end());
  EXPECT_EQ(milestones->type, "list of ints >= 0, increasing");
  EXPECT_EQ(milestones->default_value, "[90, 180, 270]");
}

// Each key's error names it, with its file and line.
TEST_F(ConfigTest, ScheduleKeyErrorsNameTheKey) {
  expect_contains(load_error("decay_rate: 0\n"), {"'decay_rate'", "line 1", "> 0", "got 0"});
  expect_contains(load_error("epochs: 9\ndecay_epochs: 0\n"), {"'decay_epochs'", "line 2", "> 0"});
  expect_contains(load_error("decay_epochs: -30\n"), {"'decay_epochs'", "> 0"});
  expect_contains(load_error("decay_milestones: [60, 30]\n"),
                  {"'decay_milestones'", "line 1", "expected increasing values, got 30 after 60"});
  expect_contains(load_error("decay_milestones: [30, 30]\n"), {"'decay_milestones'", "increasing"});
  expect_contains(load_error("decay_milestones: [-1, 30]\n"), {"'decay_milestones'", ">= 0", "-1"});
  expect_contains(load_error("decay_milestones: [1.5]\n"), {"'decay_milestones'", "integers"});
  expect_contains(override_error({"--decay-milestones", "90", "60"}),
                  {"'decay_milestones' (command line)", "60 after 90"});
  expect_contains(load_error("sched: cosine2\n"),
                  {"'sched'", "'tanh'", "'multistep'", "'cosine2'"});
  expect_contains(load_error("cooldown_epochs: -1\n"), {"'cooldown_epochs'", ">= 0"});
  expect_contains(load_error("warmup_prefix: 2\n"), {"'warmup_prefix'", "true or false"});
}

// timm's step, multistep and none read no min_lr (they have no floor): a min_lr above lr (a
// recipe's min_lr left beside a small fine-tuning lr) is no error there, as in timm's train.py,
// in the config, from lr_base and in a schedule_history entry; cosine, tanh and poly, whose floor
// it is, still refuse it.
TEST_F(ConfigTest, MinLrAboveLrIsRefusedOnlyWhereItIsTheSchedulesFloor) {
  for (const std::string sched : {"step", "multistep", "none"}) {
    std::string text = "sched: ";
    text += sched;
    text += "\nlr: 1.0e-5\nmin_lr: 1.0e-4\n";
    EXPECT_EQ(load_error(text), "") << sched;
    Config c;
    c.sched = sched;
    c.min_lr = 1.0;  // above lr_base's 0.05
    EXPECT_NO_THROW(hg::train::resolve_lr(c, 1)) << sched;
    EXPECT_DOUBLE_EQ(c.lr.value_or(0), 0.05) << sched;
  }
  for (const std::string sched : {"cosine", "tanh", "poly"}) {
    std::string text = "sched: ";
    text += sched;
    text += "\nlr: 1.0e-5\nmin_lr: 1.0e-4\n";
    expect_contains(load_error(text), {"'min_lr'", "'lr'", "min_lr 0.0001 is above lr 1e-05"});
    Config c;
    c.sched = sched;
    c.min_lr = 1.0;
    EXPECT_THROW(hg::train::resolve_lr(c, 1), hg::Error) << sched;
  }
  const std::string entry =
      "lr: 0.1\nschedule_history: [{until_epoch: 2, until_step: 0, epochs: 5, lr: 1e-05, "
      "warmup_epochs: 0, warmup_lr: 1e-05, min_lr: 1e-04, sched_on_updates: false, sched: ";
  EXPECT_EQ(load_error(entry + "step}]\n"), "");
  expect_contains(load_error(entry + "cosine}]\n"),
                  {"'schedule_history[0]'", "min_lr 0.0001 is above lr 1e-05"});
}

// schedule_history entries hold the new keys, and round-trip through args.yaml; an entry written
// before them (an older run's args.yaml or checkpoint) loads with their defaults, which are
// Config's (timm's), and a value out of its key's range names the entry.
TEST_F(ConfigTest, ScheduleHistoryHoldsTheDecayKeysAndOlderEntriesLoad) {
  Config c;
  c.lr = 0.1;
  c.sched = "multistep";
  c.decay_milestones = {2, 4};
  c.decay_rate = 0.5;
  c.decay_epochs = 1.5;
  c.warmup_prefix = true;
  c.cooldown_epochs = 3;
  c.schedule_history = {hg::train::schedule_segment(c, 3, 1, "test")};
  c.decay_rate = 0.25;
  c.warmup_prefix = false;
  const Config back = hg::train::config_from_yaml(hg::train::to_yaml(c), "args.yaml");
  EXPECT_EQ(back, c) << hg::train::to_yaml(back);
  ASSERT_EQ(back.schedule_history.size(), 1u);
  EXPECT_EQ(back.schedule_history[0].decay_rate, 0.5);
  EXPECT_EQ(back.schedule_history[0].decay_milestones, (std::vector<int64_t>{2, 4}));
  EXPECT_TRUE(back.schedule_history[0].warmup_prefix);
  EXPECT_EQ(back.cooldown_epochs, 3);
  const std::string old_entry =
      "lr: 0.1\nschedule_history: [{until_epoch: 2, until_step: 0, epochs: 5, lr: 0.2, sched: "
      "\"cosine\", warmup_epochs: 1, warmup_lr: 1e-05, min_lr: 0, sched_on_updates: false";
  const Config old = hg::train::load_config(write("old.yaml", old_entry + "}]\n"));
  ASSERT_EQ(old.schedule_history.size(), 1u);
  const hg::train::ScheduleSegment& s = old.schedule_history[0];
  EXPECT_EQ(s.lr, 0.2);
  EXPECT_EQ(s.epochs, 5);
  const Config d;
  EXPECT_EQ(s.decay_epochs, d.decay_epochs);
  EXPECT_EQ(s.decay_milestones, d.decay_milestones);
  EXPECT_EQ(s.decay_rate, d.decay_rate);
  EXPECT_EQ(s.warmup_prefix, d.warmup_prefix);
  expect_contains(load_error(old_entry + ", decay_rate: 0}]\n"),
                  {"'schedule_history[0].decay_rate'", "> 0"});
  expect_contains(load_error(old_entry + ", decay_milestones: [3, 1]}]\n"),
                  {"'schedule_history[0].decay_milestones'", "increasing"});
  expect_contains(load_error(old_entry + ", decay_rate: 0.5, decay_rate: 0.5}]\n"),
                  {"schedule_history[0].decay_rate", "given twice"});
  expect_contains(load_error(old_entry + ", decay: 1}]\n"),
                  {"unknown key 'decay'", "decay_milestones, decay_rate, warmup_prefix"});
  // the keys an entry always held are still required
  std::string no_min_lr = old_entry;
  no_min_lr.erase(no_min_lr.find(", min_lr: 0"), std::string(", min_lr: 0").size());
  expect_contains(load_error(no_min_lr + "}]\n"),
                  {"'schedule_history[0]'", "missing key 'min_lr'"});
  std::string null_lr = old_entry;
  null_lr.replace(null_lr.find("lr: 0.2"), std::string("lr: 0.2").size(), "lr: null");
  expect_contains(load_error(null_lr + "}]\n"), {"'schedule_history[0].lr'", "got null"});
}

// timm's lr noise and cycle keys at train.py's defaults (lr_cycle_decay 0.5, not the factory's
// 0.1); lr_noise as argparse's nargs='+' takes it (one or two words) and as a timm args.yaml
// holds it (null = off, a list), written back as a list.
TEST_F(ConfigTest, TimmsNoiseAndCycleKeys) {
  const Config d;
  EXPECT_TRUE(d.lr_noise.empty());
  EXPECT_EQ(d.lr_noise_pct, 0.67);
  EXPECT_EQ(d.lr_noise_std, 1.0);
  EXPECT_EQ(d.lr_cycle_mul, 1.0);
  EXPECT_EQ(d.lr_cycle_decay, 0.5);
  EXPECT_EQ(d.lr_cycle_limit, 1);
  EXPECT_EQ(d.lr_k_decay, 1.0);
  Config c;
  hg::train::apply_overrides(c,
                             {"--lr-noise", "0.4", "--lr-cycle-limit", "3", "--lr-k-decay", "2"});
  EXPECT_EQ(c.lr_noise, (std::vector<double>{0.4}));
  EXPECT_EQ(c.lr_cycle_limit, 3);
  EXPECT_EQ(c.lr_k_decay, 2.0);
  hg::train::apply_overrides(c, {"--lr-noise", "0.4", "0.9"});
  EXPECT_EQ(c.lr_noise, (std::vector<double>{0.4, 0.9}));
  EXPECT_EQ(hg::train::value_text(c, "lr_noise"), "[0.4, 0.9]");
  EXPECT_EQ(hg::train::config_from_yaml(hg::train::to_yaml(c), "args.yaml"), c);
  const Config timm = hg::train::load_config(
      write("t.yaml",
            "lr_noise: null\nlr_noise_pct: 0.5\nlr_noise_std: 2.0\nlr_cycle_mul: 1.5\n"
            "lr_cycle_decay: 0.1\n"));
  EXPECT_TRUE(timm.lr_noise.empty());
  EXPECT_EQ(timm.lr_noise_pct, 0.5);
  EXPECT_EQ(timm.lr_noise_std, 2.0);
  EXPECT_EQ(timm.lr_cycle_mul, 1.5);
  EXPECT_EQ(timm.lr_cycle_decay, 0.1);
  EXPECT_EQ(hg::train::load_config(write("n.yaml", "lr_noise: 0.25\n")).lr_noise,
            (std::vector<double>{0.25}));
}

// Each key's error names it: a noise range that would never add noise, a bound timm's redraws
// never meet, a cycle multiplier or k that timm's log and power do not take, and cycles whose
// length is no run's.
TEST_F(ConfigTest, NoiseAndCycleKeyErrorsNameTheKey) {
  expect_contains(load_error("lr_noise: [0.5, 0.5]\n"),
                  {"'lr_noise'", "line 1", "start < end", "[0.5, 0.5]"});
  expect_contains(override_error({"--lr-noise", "0.9", "0.2"}),
                  {"'lr_noise' (command line)", "start < end", "[0.9, 0.2]"});
  expect_contains(load_error("lr_noise: [0.1, 0.5, 0.9]\n"), {"'lr_noise'", "0 to 2", "got 3"});
  expect_contains(load_error("lr_noise: -0.5\n"), {"'lr_noise'", ">= 0", "-0.5"});
  expect_contains(load_error("lr_noise_pct: 0\n"), {"'lr_noise_pct'", "> 0", "got 0"});
  expect_contains(load_error("lr_noise_std: -1\n"), {"'lr_noise_std'", ">= 0"});
  expect_contains(load_error("lr_cycle_mul: 0\n"), {"'lr_cycle_mul'", "> 0"});
  expect_contains(load_error("lr_cycle_decay: -0.5\n"), {"'lr_cycle_decay'", ">= 0"});
  expect_contains(load_error("lr_cycle_limit: -1\n"), {"'lr_cycle_limit'", ">= 0"});
  expect_contains(load_error("lr_cycle_limit: 1.5\n"), {"'lr_cycle_limit'", "integer"});
  expect_contains(load_error("lr_k_decay: 0\n"), {"'lr_k_decay'", "> 0"});
  expect_contains(load_error("epochs: 10\nlr_cycle_mul: 10\nlr_cycle_limit: 20\n"),
                  {"'lr_cycle_mul'", "'lr_cycle_limit'", "20 cycles from epochs 10",
                   "get_cycle_length", "1 to 10^9"});
  // step ignores the cycles, as timm's run length does
  EXPECT_EQ(load_error("sched: step\nepochs: 10\nlr_cycle_mul: 10\nlr_cycle_limit: 20\n"), "");
}

// schedule_history entries hold the noise and cycle keys (a resume may change them), and an entry
// written before them loads with their defaults.
TEST_F(ConfigTest, ScheduleHistoryHoldsTheNoiseAndCycleKeys) {
  Config c;
  c.lr = 0.1;
  c.lr_noise = {0.2, 0.8};
  c.lr_noise_pct = 0.3;
  c.lr_noise_std = 0.5;
  c.lr_cycle_mul = 2;
  c.lr_cycle_decay = 0.25;
  c.lr_cycle_limit = 2;
  c.lr_k_decay = 1.5;
  c.schedule_history = {hg::train::schedule_segment(c, 3, 1, "test")};
  c.lr_noise = {};
  c.lr_cycle_limit = 1;
  const Config back = hg::train::config_from_yaml(hg::train::to_yaml(c), "args.yaml");
  EXPECT_EQ(back, c) << hg::train::to_yaml(back);
  ASSERT_EQ(back.schedule_history.size(), 1u);
  const hg::train::ScheduleSegment& h = back.schedule_history[0];
  EXPECT_EQ(h.lr_noise, (std::vector<double>{0.2, 0.8}));
  EXPECT_EQ(h.lr_noise_pct, 0.3);
  EXPECT_EQ(h.lr_noise_std, 0.5);
  EXPECT_EQ(h.lr_cycle_mul, 2);
  EXPECT_EQ(h.lr_cycle_decay, 0.25);
  EXPECT_EQ(h.lr_cycle_limit, 2);
  EXPECT_EQ(h.lr_k_decay, 1.5);
  const std::string old_entry =
      "lr: 0.1\nschedule_history: [{until_epoch: 2, until_step: 0, epochs: 5, lr: 0.2, sched: "
      "\"cosine\", warmup_epochs: 1, warmup_lr: 1e-05, min_lr: 0, sched_on_updates: false";
  const Config old = hg::train::load_config(write("old.yaml", old_entry + "}]\n"));
  ASSERT_EQ(old.schedule_history.size(), 1u);
  const Config d;
  const hg::train::ScheduleSegment& s = old.schedule_history[0];
  EXPECT_EQ(s.lr_noise, d.lr_noise);
  EXPECT_EQ(s.lr_noise_pct, d.lr_noise_pct);
  EXPECT_EQ(s.lr_cycle_decay, d.lr_cycle_decay);
  EXPECT_EQ(s.lr_cycle_limit, d.lr_cycle_limit);
  expect_contains(load_error(old_entry + ", lr_noise: [0.7, 0.3]}]\n"),
                  {"'schedule_history[0].lr_noise'", "start < end"});
  expect_contains(load_error(old_entry + ", lr_k_decay: 0}]\n"),
                  {"'schedule_history[0].lr_k_decay'", "> 0"});
}

// The keys of timm's train.py options added later (head_init_scale, head_init_bias,
// no_resume_opt, start_epoch, recovery_interval): an args.yaml written before them loads with
// timm's defaults; their values are checked, naming the key; their spellings are timm's.
TEST_F(ConfigTest, TimmsLaterTrainKeysLoadCheckAndDefault) {
  std::string before = hg::train::to_yaml(Config{});
  for (const char* k :
       {"head_init_scale", "head_init_bias", "no_resume_opt", "start_epoch", "recovery_interval"}) {
    const size_t at = before.find(std::string("\n") + k + ":");
    ASSERT_NE(at, std::string::npos) << k;
    before.erase(at + 1, before.find('\n', at + 1) - at);
  }
  EXPECT_EQ(before.find("start_epoch"), std::string::npos);
  EXPECT_EQ(hg::train::config_from_yaml(before, "older args.yaml"), Config{});
  const Config d;
  EXPECT_FALSE(d.head_init_scale.has_value());
  EXPECT_FALSE(d.head_init_bias.has_value());
  EXPECT_FALSE(d.no_resume_opt);
  EXPECT_FALSE(d.start_epoch.has_value());
  EXPECT_EQ(d.recovery_interval, 0);

  Config c;
  hg::train::apply_overrides(
      c, {"--head-init-scale", "0.001", "--head-init-bias=-2.5", "--no-resume-opt", "--start-epoch",
          "3", "--recovery-interval", "100"});
  EXPECT_EQ(c.head_init_scale, 0.001);
  EXPECT_EQ(c.head_init_bias, -2.5);
  EXPECT_TRUE(c.no_resume_opt);
  EXPECT_EQ(c.start_epoch, 3);
  EXPECT_EQ(c.recovery_interval, 100);

  expect_contains(load_error("start_epoch: -1\n"),
                  {"key 'start_epoch'", "line 1", "expected an integer in [0, 1000000000]"});
  expect_contains(load_error("recovery_interval: -5\n"),
                  {"key 'recovery_interval'", "expected an integer >= 0, got -5"});
  expect_contains(load_error("head_init_scale: abc\n"),
                  {"key 'head_init_scale'", "expected a number or null"});
  // a start at or past the run's end trains nothing: named with the run's length
  expect_contains(
      load_error("epochs: 10\nstart_epoch: 10\n"),
      {"keys 'start_epoch'", "and 'epochs'", "the run is 10 epochs long", "expected at most 9"});
  expect_contains(load_error("epochs: 10\ncooldown_epochs: 2\nstart_epoch: 12\n"),
                  {"the run is 12 epochs long", "expected at most 11"});
  EXPECT_EQ(hg::train::config_from_yaml("epochs: 10\nstart_epoch: 9\n", "x").start_epoch, 9);
}

// timm's train.py options that haargrad has not say so, and what to use, by their timm names.
TEST_F(ConfigTest, TimmsUnsupportedTrainOptionsSayWhy) {
  expect_contains(override_error({"--bce-loss"}),
                  {"unknown key 'bce_loss' (command line): timm's --bce-loss is not supported",
                   "cross-entropy"});
  expect_contains(override_error({"--log-wandb"}), {"timm's --log-wandb is not supported"});
  expect_contains(override_error({"--model-ema-force-cpu"}),
                  {"timm's --model-ema-force-cpu is not supported"});
  expect_contains(override_error({"--epoch-repeats", "2"}),
                  {"timm's --epoch-repeats repeats only its iterable datasets"});
  expect_contains(override_error({"--worker-seeding", "all"}),
                  {"timm's --worker-seeding has nothing to set"});
  expect_contains(override_error({"--train-steps-per-epoch", "10"}),
                  {"is max_steps_per_epoch here"});
  expect_contains(override_error({"--kd-model-name", "resnet50"}),
                  {"knowledge distillation", "not supported"});
  // options of timm releases after the train.py docs/timm-keys.md follows
  expect_contains(override_error({"--stop-epoch", "3"}),
                  {"timm 1.0.31's --stop-epoch is not supported", "Ctrl-C"});
  expect_contains(override_error({"--task", "multilabel"}), {"multi-label", "not supported"});
  expect_contains(override_error({"--lr-decay-fn", "linear"}), {"wsd schedule"});
  expect_contains(override_error({"--sched", "wsd"}), {"wsd schedule", "not supported"});
  expect_contains(override_error({"--sched", "constant"}),
                  {"constant schedule", "not supported", "sched none is lr throughout"});
  expect_contains(
      load_error("grad_checkpointing: true\nno_aug: true\n"),
      {"2 unknown keys", "timm's --grad-checkpointing is not supported", "timm's --no-aug"});
}

// sched plateau and its patience_epochs (timm's defaults: patience 10), with what timm's
// PlateauLRScheduler and torch's ReduceLROnPlateau refuse, and what haargrad's one lr cannot
// follow: each message names both keys and why.
TEST_F(ConfigTest, PlateauAndItsKeys) {
  EXPECT_EQ(Config{}.patience_epochs, 10);
  path_ = write("p.yaml", "sched: plateau\npatience_epochs: 3\n");
  const Config c = hg::train::load_config(path_);
  EXPECT_EQ(c.sched, "plateau");
  EXPECT_EQ(c.patience_epochs, 3);
  Config o;
  hg::train::apply_overrides(o, {"--sched", "plateau", "--patience-epochs", "0"});
  EXPECT_EQ(o.patience_epochs, 0);
  expect_contains(load_error("sched: plateau\npatience_epochs: -1\n"),
                  {"'patience_epochs'", "line 2", ">= 0", "-1"});
  expect_contains(override_error({"--patience-epochs", "2.5"}), {"'patience_epochs'"});
  // min_lr is the plateau's floor: above lr it would never decay, unsaid (cosine refused it)
  expect_contains(load_error("sched: plateau\nlr: 1.0e-4\nmin_lr: 1.0e-3\n"),
                  {"'min_lr'", "'lr'", "min_lr 0.001 is above lr 0.0001"});
  expect_contains(load_error("sched: plateau\nsched_on_updates: true\n"),
                  {"'sched'", "'sched_on_updates'", "once an epoch", "sched_on_updates false"});
  expect_contains(load_error("sched: plateau\ndecay_rate: 1\n"),
                  {"'sched'", "'decay_rate'", "below 1", "got 1"});
  expect_contains(load_error("sched: plateau\nlayer_decay: 0.8\nmin_lr: 1.0e-6\n"),
                  {"'layer_decay'", "'min_lr'", "each layer group", "min_lr 0"});
  // torch makes no decay of its eps (1e-8) or less: a decay_rate that close to 1 never decays,
  // unsaid; from lr and from the lr lr_base gives (batch 256: lr_base itself)
  expect_contains(load_error("sched: plateau\nlr: 1.0e-3\ndecay_rate: 0.9999999999\n"),
                  {"'lr'", "'decay_rate'", "by 1e-13", "eps 1e-08", "no decay would ever be made"});
  // min_lr within the eps of lr bounds the decay: min_lr named, not decay_rate
  expect_contains(load_error("sched: plateau\nlr: 1.0e-3\nmin_lr: 0.000999999995\n"),
                  {"'lr'", "'min_lr'", "(to min_lr)", "lower min_lr"});
  EXPECT_EQ(hg::train::config_from_yaml("sched: plateau\nlr: 1.0e-3\ndecay_rate: 0.99998\n", "t")
                .decay_rate,
            0.99998);  // lowers it by 2e-8: made
  Config base = hg::train::config_from_yaml(
      "sched: plateau\nlr: null\nlr_base: 1.0e-3\nbatch_size: 256\ndecay_rate: 0.9999999999\n",
      "t");
  try {
    (void)hg::train::resolve_lr(base, 1);
    ADD_FAILURE() << "resolve_lr took a plateau that never decays";
  } catch (const hg::Error& e) {
    expect_contains(e.what(), {"no decay would ever be made", "from lr_base"});
  }
  // what other scheds take stays theirs: poly's power above 1, per-update steps, min_lr 0 with
  // layer_decay under plateau
  EXPECT_EQ(hg::train::config_from_yaml("sched: poly\ndecay_rate: 2\n", "t").decay_rate, 2);
  EXPECT_TRUE(
      hg::train::config_from_yaml("sched: step\nsched_on_updates: true\n", "t").sched_on_updates);
  EXPECT_EQ(hg::train::config_from_yaml("sched: plateau\nlayer_decay: 0.8\n", "t").layer_decay,
            0.8);
}
