// The model builder against timm's rules, over random configs: every parameter name, shape and
// order equals what timm's ConvNeXt (and the reference WTConv2d in its blocks) would register for
// the same depths, dims (with repeated widths), kernel size, levels, patch size and layer scale.
//
// The expected list is written here from timm's ConvNeXt.__init__ / ConvNeXtStage / ConvNeXtBlock,
// independently of models/: stage strides start from the stem's patch size (stage 0 strides 2
// only when that is 2, later stages always 2), a stage has a downsample (norm + conv, kernel 2 when
// striding) when it strides or its width changes, a block has gamma whenever ls_init_value is not
// None (0 included), and PyTorch lists a module's own parameters before its children's.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/checkpoint.h"
#include "models/convnext.h"
#include "test_util.h"

using namespace hg;

namespace {

struct Expected {
  std::string name;
  Shape shape;
  bool trainable;
};

// timm's strides for `stages` stages after a patch_size stem (output_stride 32, never reached here).
std::vector<int> timm_strides(int patch, size_t stages) {
  std::vector<int> out;
  int curr = patch;
  for (size_t i = 0; i < stages; ++i) {
    const int stride = (curr == 2 || i > 0) ? 2 : 1;
    out.push_back(stride);
    curr *= stride;
  }
  return out;
}

std::vector<Expected> timm_parameters(const ModelConfig& c) {
  std::vector<Expected> e;
  const int64_t K = c.kernel_size;
  auto add = [&](const std::string& n, Shape s, bool trainable = true) { e.push_back({n, std::move(s), trainable}); };
  add("stem.0.weight", {c.dims[0], c.in_chans, c.patch_size, c.patch_size});
  add("stem.0.bias", {c.dims[0]});
  add("stem.1.weight", {c.dims[0]});
  add("stem.1.bias", {c.dims[0]});
  const std::vector<int> strides = timm_strides(c.patch_size, c.depths.size());
  int64_t prev = c.dims[0];
  for (size_t i = 0; i < c.depths.size(); ++i) {
    const std::string s = "stages." + std::to_string(i) + ".";
    const int64_t C = c.dims[i];
    if (prev != C || strides[i] > 1) {
      const int64_t k = strides[i] > 1 ? 2 : 1;
      add(s + "downsample.0.weight", {prev});
      add(s + "downsample.0.bias", {prev});
      add(s + "downsample.1.weight", {C, prev, k, k});
      add(s + "downsample.1.bias", {C});
    }
    for (int j = 0; j < c.depths[i]; ++j) {
      const std::string b = s + "blocks." + std::to_string(j) + ".";
      if (c.ls_init_value) add(b + "gamma", {C});
      if (c.wtconv) {
        add(b + "conv_dw.wt_filter", {4 * C, 1, 2, 2}, false);
        add(b + "conv_dw.iwt_filter", {4 * C, 1, 2, 2}, false);
        add(b + "conv_dw.base_conv.weight", {C, 1, K, K});
        add(b + "conv_dw.base_conv.bias", {C});
        add(b + "conv_dw.base_scale.weight", {1, C, 1, 1});
        for (int l = 0; l < c.wt_levels[i]; ++l) add(b + "conv_dw.wavelet_convs." + std::to_string(l) + ".weight", {4 * C, 1, K, K});
        for (int l = 0; l < c.wt_levels[i]; ++l) add(b + "conv_dw.wavelet_scale." + std::to_string(l) + ".weight", {1, 4 * C, 1, 1});
      } else {
        add(b + "conv_dw.weight", {C, 1, K, K});
        add(b + "conv_dw.bias", {C});
      }
      add(b + "norm.weight", {C});
      add(b + "norm.bias", {C});
      // timm's conv_mlp variants (atto .. nano) hold the MLP as two 1x1 convs
      add(b + "mlp.fc1.weight", c.conv_mlp ? Shape{4 * C, C, 1, 1} : Shape{4 * C, C});
      add(b + "mlp.fc1.bias", {4 * C});
      add(b + "mlp.fc2.weight", c.conv_mlp ? Shape{C, 4 * C, 1, 1} : Shape{C, 4 * C});
      add(b + "mlp.fc2.bias", {C});
    }
    prev = C;
  }
  add("head.norm.weight", {prev});
  add("head.norm.bias", {prev});
  add("head.fc.weight", {c.num_classes, prev});
  add("head.fc.bias", {c.num_classes});
  return e;
}

std::string describe(const ModelConfig& c) {
  return str("wtconv ", c.wtconv, " depths ", shape_str(c.depths), " dims ", shape_str(c.dims), " K ", c.kernel_size,
             " levels ", shape_str(c.wt_levels), " patch ", c.patch_size, " ls ",
             c.ls_init_value ? str(*c.ls_init_value) : std::string("None"));
}

}  // namespace

TEST(TimmStructure, RandomConfigsMatchTimmsParameterNamesShapesAndOrder) {
  // the smallest inputs give WTConv's "levels see a 1x1 map" warning for nearly every block
  const auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::err);
  std::mt19937 rng(2024);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int with_repeats = 0, with_patch2 = 0;
  for (int trial = 0; trial < 60; ++trial) {
    ModelConfig c;
    c.model = "random";
    c.wtconv = pick(0, 1) == 1;
    const int stages = pick(1, 4);
    c.depths.clear();
    c.dims.clear();
    c.wt_levels.clear();
    for (int i = 0; i < stages; ++i) {
      c.depths.push_back(pick(0, 2));
      // repeated widths on purpose: the same width as the previous stage one time in three
      c.dims.push_back(i > 0 && pick(0, 2) == 0 ? c.dims.back() : 2 * pick(1, 6));
      c.wt_levels.push_back(pick(1, 3));
    }
    for (int i = 1; i < stages; ++i) with_repeats += c.dims[i] == c.dims[i - 1];
    c.kernel_size = 2 * pick(0, 3) + 1;
    c.patch_size = pick(1, 4);
    with_patch2 += c.patch_size == 2;
    const int ls = pick(0, 3);
    c.ls_init_value = ls == 0 ? std::nullopt : std::optional<double>(ls == 1 ? 0.0 : ls == 2 ? 1e-6 : 0.5);
    c.num_classes = pick(1, 7);
    c.in_chans = pick(0, 1) ? 3 : 1;
    c.conv_mlp = pick(0, 1) == 1;
    SCOPED_TRACE(describe(c));

    const ConvNeXt model(c, static_cast<uint64_t>(trial));
    const std::vector<ParamRef> params = model.named_tensors();
    const std::vector<std::pair<std::string, Tensor>> got = timm_state_dict(model);
    const std::vector<Expected> want = timm_parameters(c);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_EQ(params.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].first, want[i].name) << i;
      EXPECT_EQ(got[i].second.shape(), want[i].shape) << want[i].name;
      EXPECT_EQ(params[i].trainable, want[i].trainable) << want[i].name;
    }
    // A forward at the smallest input the model takes reaches a 1x1 last map.
    Tensor x = Tensor::full({1, c.total_stride(), c.total_stride(), c.in_chans}, 0.25);
    std::vector<std::pair<std::string, Tensor>> acts;
    ConvNeXt m2(c, 1);
    const Tensor logits = m2.forward(x, false, &acts);
    EXPECT_EQ(logits.shape(), (Shape{1, c.num_classes}));
    EXPECT_EQ(acts.back().second.size(1), 1);
    EXPECT_EQ(acts.back().second.size(2), 1);
  }
  EXPECT_GT(with_repeats, 5) << "the random configs must include repeated widths";
  EXPECT_GT(with_patch2, 5) << "and patch-2 stems (a stride-2 downsample in stage 0)";
  spdlog::set_level(level);
}

// timm's atto .. nano set conv_mlp (1x1 conv MLPs); tiny .. base do not. A checkpoint in either
// shape loads back into the model.
TEST(TimmStructure, NamedVariantsHoldTimmsMlpShapes) {
  for (const std::string family : {"convnext_", "wtconvnext_"})
    for (const std::string size : {"atto", "femto", "pico", "nano", "tiny"}) {
      const ModelConfig c = model_config(family + size);
      EXPECT_EQ(c.conv_mlp, size != "tiny") << c.model;
    }
  const ConvNeXt atto(model_config("convnext_atto"), 3);
  std::map<std::string, Tensor> saved;
  for (const auto& [name, t] : timm_state_dict(atto)) saved.emplace(name, t);
  EXPECT_EQ(saved.at("stages.0.blocks.0.mlp.fc1.weight").shape(), (Shape{160, 40, 1, 1}));
  EXPECT_EQ(saved.at("stages.3.blocks.1.mlp.fc2.weight").shape(), (Shape{320, 1280, 1, 1}));
  ConvNeXt other(model_config("convnext_atto"), 4);
  load_state_dict(other, saved);
  EXPECT_EQ(other.stages[0]->blocks[0]->fc1.weight.to_vector<float>(),
            atto.stages[0]->blocks[0]->fc1.weight.to_vector<float>());
}

// An integer or boolean tensor under a weight's name is refused (strict or not): converted, a
// damaged file's I32 weight loaded as values near 1e9 (float bits read as integers), unsaid.
TEST(TimmStructure, AWeightThatIsNotFloatingPointIsRefused) {
  ModelConfig c = model_config("convnext_atto");
  c.depths = {1, 1};
  c.dims = {8, 16};
  const ConvNeXt m(c, 3);
  std::map<std::string, Tensor> saved;
  for (const auto& [name, t] : timm_state_dict(m)) saved.emplace(name, t);
  const Tensor w = saved.at("stem.0.weight");
  saved["stem.0.weight"] = w.to(DType::i32);
  ConvNeXt other(c, 4);
  const std::vector<float> before = other.stem_conv->weight.to_vector<float>();
  for (bool strict : {true, false}) {
    const std::string msg = test::error_of([&] { load_state_dict(other, saved, strict); });
    EXPECT_NE(msg.find("keys that are not floating point (1): stem.0.weight (i32)"),
              std::string::npos)
        << msg;
  }
  EXPECT_EQ(other.stem_conv->weight.to_vector<float>(), before);  // nothing loaded
}

TEST(TimmStructure, LayerScaleFollowsTimm) {
  ModelConfig c = model_config("convnext_atto");
  c.depths = {1, 1};
  c.dims = {8, 16};
  c.ls_init_value = 0.0;  // timm: a gamma of zeros, not "no layer scale"
  const ConvNeXt zero(c, 0);
  ASSERT_TRUE(zero.stages[0]->blocks[0]->gamma.defined());
  EXPECT_EQ(zero.stages[0]->blocks[0]->gamma.to_vector<double>()[0], 0.0);
  c.ls_init_value = std::nullopt;  // timm: None
  const ConvNeXt none(c, 0);
  EXPECT_FALSE(none.stages[0]->blocks[0]->gamma.defined());
}

TEST(TimmStructure, MoreThanFourStagesOrDilatedStridesAreRejected) {
  ModelConfig c = model_config("convnext_atto");
  c.depths = {1, 1, 1, 1, 1};
  c.dims = {8, 8, 8, 8, 8};
  try {
    c.validate();
    FAIL() << "5 stages accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("at most 4"), std::string::npos) << e.what();
  }
  c = model_config("convnext_atto");
  c.patch_size = 8;  // 8, 16, 32, then timm would dilate stage 3
  try {
    c.validate();
    FAIL() << "a dilated stage accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("patch_size <= 7"), std::string::npos) << e.what();
  }
}
