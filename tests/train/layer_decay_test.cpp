// Layer-wise lr decay (layer_decay): timm's layer ids for a 4-stage ConvNeXt (stem 0, one layer per
// block, a stage's downsample with its first block, head last), lr scales layer_decay^(last - id),
// weight decay split inside each layer, and the optimizer applying the scales on set_lr.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <map>

#include "models/convnext.h"
#include "train/config.h"
#include "train/layer_decay.h"
#include "train/trainer.h"

using namespace hg;

namespace {
struct GroupOf {
  double lr_scale, weight_decay;
};
std::map<std::string, GroupOf> by_name(const std::vector<train::ParamGroup>& groups) {
  std::map<std::string, GroupOf> out;
  for (const train::ParamGroup& g : groups)
    for (const std::string& n : g.names) out[n] = {g.lr_scale, g.weight_decay};
  return out;
}
}  // namespace

TEST(LayerDecay, LayerIdsOfAFourStageConvNeXtAsTimm) {
  const std::vector<int64_t> depths = {2, 2, 6, 2};  // convnext_atto: 12 blocks, 14 layers
  EXPECT_EQ(train::convnext_num_layers(depths), 14);
  EXPECT_EQ(train::convnext_layer_id("stem.0.weight", depths), 0);
  EXPECT_EQ(train::convnext_layer_id("stem.1.bias", depths), 0);
  EXPECT_EQ(train::convnext_layer_id("stages.0.blocks.0.conv_dw.weight", depths), 1);
  EXPECT_EQ(train::convnext_layer_id("stages.0.blocks.1.gamma", depths), 2);
  EXPECT_EQ(train::convnext_layer_id("stages.1.downsample.0.weight", depths), 3);
  EXPECT_EQ(train::convnext_layer_id("stages.1.blocks.0.mlp.fc1.weight", depths), 3);
  EXPECT_EQ(train::convnext_layer_id("stages.2.blocks.5.mlp.fc2.bias", depths), 10);
  EXPECT_EQ(train::convnext_layer_id("stages.3.downsample.1.weight", depths), 11);
  EXPECT_EQ(train::convnext_layer_id("stages.3.blocks.1.norm.weight", depths), 12);
  EXPECT_EQ(train::convnext_layer_id("head.norm.weight", depths), 13);
  EXPECT_EQ(train::convnext_layer_id("head.fc.bias", depths), 13);
  EXPECT_EQ(train::convnext_layer_id("stages.12.blocks.0.x", depths), 13);  // unmatched: the head's
}

TEST(LayerDecay, GroupsCarryTimmScalesAndTheWeightDecaySplit) {
  const ConvNeXt model(model_config("convnext_atto"), 1);
  const auto groups =
      train::param_groups_layer_decay(model.named_tensors(), {2, 2, 6, 2}, 0.1, 0.05, 0.5);
  const auto g = by_name(groups);
  size_t trainable = 0;
  for (const ParamRef& p : model.named_tensors()) trainable += p.trainable;
  EXPECT_EQ(g.size(), trainable);
  // hand-written: 0.5^(13 - layer id)
  EXPECT_DOUBLE_EQ(g.at("stem.0.weight").lr_scale, 1.0 / 8192);
  EXPECT_DOUBLE_EQ(g.at("stem.0.weight").weight_decay, 0.05);
  EXPECT_DOUBLE_EQ(g.at("stem.0.bias").weight_decay, 0.0);
  EXPECT_DOUBLE_EQ(g.at("stages.0.blocks.0.mlp.fc1.weight").lr_scale, 1.0 / 4096);
  EXPECT_DOUBLE_EQ(g.at("stages.1.downsample.1.weight").lr_scale, 1.0 / 1024);
  EXPECT_DOUBLE_EQ(g.at("stages.2.blocks.5.mlp.fc2.weight").lr_scale, 1.0 / 8);
  EXPECT_DOUBLE_EQ(g.at("stages.3.blocks.1.gamma").lr_scale, 0.5);
  EXPECT_DOUBLE_EQ(g.at("stages.3.blocks.1.gamma").weight_decay, 0.0);
  EXPECT_DOUBLE_EQ(g.at("head.fc.weight").lr_scale, 1.0);
  EXPECT_DOUBLE_EQ(g.at("head.fc.weight").weight_decay, 0.05);
  EXPECT_DOUBLE_EQ(g.at("head.norm.weight").weight_decay, 0.0);
  // one group per (layer, decay): 14 layers x 2, in the order the parameters reach them
  EXPECT_EQ(groups.size(), 28u);
  EXPECT_EQ(groups.front().names.front(), "stem.0.weight");
  // the optimizer's lr = schedule lr x scale
  train::AdamW opt(groups);
  opt.set_lr(0.2);
  for (const train::ParamGroup& grp : opt.param_groups())
    EXPECT_DOUBLE_EQ(grp.lr, 0.2 * grp.lr_scale);
  EXPECT_THROW(train::param_groups_layer_decay(model.named_tensors(), {2, 2, 6, 2}, 0.1, 0.05, 0.0),
               Error);
}

// The trainer honours layer_decay: with a small decay the stem (scale 1e-3^(layers - 1)) barely
// moves over an epoch while the head learns at the full rate.
TEST(LayerDecay, TheTrainerScalesTheLearningRatesByLayer) {
  train::Config c = train::load_config(std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml");
  c.output =
      (std::filesystem::temp_directory_path() / ("hg_layer_decay_" + std::to_string(::getpid())))
          .string();
  c.device = "cpu";
  c.epochs = 1;
  c.warmup_epochs = 0;
  c.layer_decay = 1e-3;
  std::map<int64_t, std::map<std::string, std::vector<float>>> after;  // step -> weights
  train::TrainOptions o;
  o.plain_output = true;
  o.after_step = [&](int64_t, int64_t step, ConvNeXt& m) {
    for (const ParamRef& p : m.named_tensors()) after[step][p.name] = p.tensor.to_vector<float>();
    return false;
  };
  train::train(c, o);
  std::filesystem::remove_all(c.output);
  ASSERT_EQ(after.size(), 3u);
  auto max_change = [&](const std::string& name) {
    double m = 0;
    for (size_t i = 0; i < after[1][name].size(); ++i)
      m = std::max(m, double(std::abs(after[3][name][i] - after[1][name][i])));
    return m;
  };
  EXPECT_LT(max_change("stem.0.weight"), 1e-9);   // lr 1e-3 x 1e-9 per step
  EXPECT_GT(max_change("head.fc.weight"), 1e-5);  // lr 1e-3 per step
}
