// A timm run's args.yaml loads: timm's options that haargrad has no key for are ignored at values
// that ask for nothing it does otherwise (train/timm_keys.h), and refused at any other.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "captured_log.h"
#include "core/error.h"
#include "train/config.h"

namespace {

std::string timm_args() {
  std::ifstream in(std::string(HAARGRAD_SOURCE_DIR) + "/tests/train/timm_args_defaults.yaml");
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_GT(s.str().size(), 1000u) << "tests/train/timm_args_defaults.yaml not read";
  return s.str();
}

// timm_args() with `key: value` put in for the key's line, or added (an option of a later timm)
std::string with(const std::string& key, const std::string& value) {
  const std::string text = timm_args();
  const std::regex line("\n" + key + ":[^\n]*");
  if (!std::regex_search(text, line)) return text + key + ": " + value + "\n";
  return std::regex_replace(text, line, "\n" + key + ": " + value);
}

std::string load_error(const std::string& text) {
  try {
    (void)hg::train::config_from_yaml(text, "args.yaml");
  } catch (const hg::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(TimmKeys, ATimmArgsYamlAtItsDefaultsLoads) {
  hg::test::CapturedLog log;
  const hg::train::Config c = hg::train::config_from_yaml(timm_args(), "args.yaml");
  EXPECT_EQ(c.model, "convnext_tiny");
  EXPECT_EQ(c.data_dir, "/tmp/data");
  EXPECT_EQ(c.sched, "cosine");
  EXPECT_FALSE(c.lr.has_value());  // timm's lr None: from lr_base
  // the ignored options named in one line, the off ones and the default ones
  const std::string said = log.text();
  for (const char* key : {"ignored: amp, amp_dtype,", " bce_loss,", " channels_last,",
                          " kd_temperature,", " naflex_train_seq_lens,", " worker_seeding"})
    EXPECT_NE(said.find(key), std::string::npos) << key << " not in: " << said;
}

TEST(TimmKeys, AValueThatAsksForSomethingIsRefusedWithTimmsName) {
  // an option turned on, a tuning of an off feature moved, a default changed
  const std::pair<const char*, const char*> asks[] = {
      {"bce_loss", "true"},
      {"amp", "true"},
      {"kd_temperature", "2.0"},
      {"eval_metric", "loss"},
      {"vflip", "0.5"},
      {"wandb_tags", "[a]"},
      {"val_interval", "2"},
      {"clip_mode", "agc"},
      {"model_kwargs", "{a: 1}"},
      {"train_crop_mode", "rkrr"},
      {"class_map", "map.txt"},
      // quoted, a non-empty string: true to timm whatever it says (train.py: `if args.amp:`)
      {"amp", "'false'"},
      {"log_wandb", "\"0\""},
      {"bce_loss", "'off'"},
      {"pretrained_path", "'off'"},
      {"kd_temperature", "'4.0'"}};
  for (const auto& [key, value] : asks) {
    const std::string msg = load_error(with(key, value));
    EXPECT_NE(msg.find(std::string("unknown key '") + key + "'"), std::string::npos)
        << key << ": " << value << " -> " << msg;
    EXPECT_NE(msg.find("timm's"), std::string::npos) << msg;
  }
}

TEST(TimmKeys, WhatChangesNoResultHereIsIgnoredAtAnyValue) {
  const std::pair<const char*, const char*> ignored[] = {
      {"channels_last", "true"},
      {"local_rank", "3"},
      {"dist_bn", "broadcast"},
      {"no_prefetcher", "true"},
      {"train_crop_mode", "rrc"},
      {"kd_temperature", "4"},
      {"sync_bn", "true"},
      {"torchcompile", "inductor"},
      // YAML 1.1's False and an empty string: off to PyYAML and timm
      {"amp", "no"},
      {"log_wandb", "Off"},
      {"class_map", "''"},
      // timm 1.0.31's options, off
      {"stop_epoch", "null"},
      {"task", "null"}};
  for (const auto& [key, value] : ignored)
    EXPECT_EQ(load_error(with(key, value)), "") << key << ": " << value;
}

TEST(TimmKeys, OnlyTimmsOptionsAreIgnored) {
  // an off value of a key timm has not is an unknown key still, named alone
  const std::string msg = load_error(timm_args() + "bce_los: false\n");
  EXPECT_NE(msg.find("unknown key 'bce_los'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("'amp'"), std::string::npos) << msg;
  EXPECT_NE(load_error("log_wandb: false\nlr_foo: 0\n").find("'lr_foo'"), std::string::npos);
}
