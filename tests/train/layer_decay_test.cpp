// Layer-wise lr decay (layer_decay): timm's layer ids for a 4-stage ConvNeXt (stem 0, one layer per
// block, a stage's downsample with its first block, head last), lr scales layer_decay^(last - id),
// weight decay split inside each layer, and the optimizer applying the scales on set_lr.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <vector>

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

// The trainer honours layer_decay, layer by layer: the smoke model (depths (1, 1)) has 4 layers,
// the stem (lr scale 0.5^3), stage 0's block (0.5^2), stage 1's downsample and block (0.5) and the
// head (1). AdamW's first step moves each element by lr x scale x m / (sqrt(v) + eps) with m = g
// and v = g^2 (bias-corrected), i.e. by lr x scale wherever |g| >> eps = 1e-8; so the median
// |change| of every trainable tensor is lr x scale of its layer (measured within 0.1%; a layer
// one off is a factor 2). Weight decay is off (it would add lr x scale x 0.05 x |w|) and the
// layer scale starts at 1 (at timm's 1e-6 the blocks' gradients are near eps, and their steps
// fall short of lr x scale). With decay 1e-3 this test checked the stem (lr 1e-12, an update that
// rounds to nothing in f32) and the head alone: a block's wrong layer id passed.
TEST(LayerDecay, TheTrainerScalesTheLearningRatesByLayer) {
  train::Config c = train::load_config(std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml");
  c.output =
      (std::filesystem::temp_directory_path() / ("hg_layer_decay_" + std::to_string(::getpid())))
          .string();
  c.device = "cpu";
  c.epochs = 1;
  c.max_steps_per_epoch = 1;
  c.warmup_epochs = 0;  // the first step at the peak lr (cosine at t = 0)
  c.weight_decay = 0.0;
  c.ls_init_value = 1.0;
  c.layer_decay = 0.5;
  ASSERT_EQ(c.depths, (std::vector<int64_t>{1, 1}));
  std::map<std::string, std::vector<float>> before, after;  // trainable weights
  for (const ParamRef& p :
       ConvNeXt(train::model_config_from(c), static_cast<uint64_t>(c.seed)).named_tensors())
    if (p.trainable) before[p.name] = p.tensor.to_vector<float>();
  train::TrainOptions o;
  o.plain_output = true;
  o.after_step = [&](int64_t, int64_t, ConvNeXt& m) {
    for (const ParamRef& p : m.named_tensors())
      if (p.trainable) after[p.name] = p.tensor.to_vector<float>();
    return false;
  };
  train::train(c, o);
  std::filesystem::remove_all(c.output);
  ASSERT_EQ(after.size(), before.size());
  std::map<int64_t, int> tensors_of_layer;
  for (const auto& [name, w] : before) {
    ASSERT_TRUE(after.count(name)) << name;
    ASSERT_EQ(after[name].size(), w.size()) << name;
    // the elements that moved: a zero gradient leaves an element in place whatever its lr (stage
    // 1's 5x5 wavelet kernels work on a 2x2 map: their outer taps see only padding, 1024 of 1600)
    std::vector<double> change;
    for (size_t i = 0; i < w.size(); ++i)
      if (after[name][i] != w[i]) change.push_back(std::abs(double(after[name][i]) - double(w[i])));
    ASSERT_GE(change.size(), w.size() / 3) << name << ": fewer than a third of its elements moved";
    std::nth_element(change.begin(), change.begin() + change.size() / 2, change.end());
    const double median = change[change.size() / 2];
    // the layer by hand (not convnext_layer_id, which the trainer's groups come from): one block
    // a stage, so a stage's downsample and block are one layer
    const int64_t layer = name.rfind("stem.", 0) == 0       ? 0
                          : name.rfind("stages.0.", 0) == 0 ? 1
                          : name.rfind("stages.1.", 0) == 0 ? 2
                                                            : 3;
    if (layer == 3) {
      EXPECT_EQ(name.rfind("head.", 0), 0u) << name;
    }
    ++tensors_of_layer[layer];
    const double expect = *c.lr * std::pow(0.5, 3 - layer);
    EXPECT_NEAR(median / expect, 1.0, 0.05) << name << " (layer " << layer << ")";
  }
  EXPECT_EQ(tensors_of_layer.size(), 4u);  // every layer was seen
}
