// Counting from the config (param_count) against built models, and the WTConv level advice: when a
// level sees no spatial data it says so once per model, naming wt_levels that exist.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "captured_log.h"
#include "models/config.h"
#include "models/convnext.h"
#include "test_util.h"

namespace hg {
namespace {

// An unknown model name listed the fifteen known ones and left the reader to find the one meant
// ("convnext_Tiny", "wtconvnext_tinny"): the close one is named first.
TEST(ModelConfig, AnUnknownModelNamesTheCloseOne) {
  for (const auto& [typed, meant] : {std::pair{"convnext_Tiny", "convnext_tiny"},
                                     std::pair{"wtconvnext_tinny", "wtconvnext_tiny"}}) {
    try {
      model_config(typed);
      ADD_FAILURE() << typed;
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(
          m.find(str("unknown model '", typed, "' (did you mean '", meant, "'?); known models: ")),
          std::string::npos)
          << m;
      EXPECT_NE(m.find("known models: convnext_atto"), std::string::npos) << m;
    }
  }
  // timm's names with a pretrained tag ("convnext_tiny.fb_in1k") or a hub prefix name the
  // architecture and the weights timm downloads: said so, with where weights come from here
  for (const auto& [typed, arch] : {std::pair{"convnext_tiny.fb_in1k", "convnext_tiny"},
                                    std::pair{"timm/convnext_atto.d2_in1k", "convnext_atto"},
                                    std::pair{"hf-hub:timm/convnext_nano", "convnext_nano"}}) {
    try {
      model_config(typed);
      ADD_FAILURE() << typed;
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(str("unknown model '", typed, "': timm's name of ", arch,
                           " with the pretrained weights timm downloads; haargrad builds model ",
                           arch, " and reads weights from initial_checkpoint")),
                std::string::npos)
          << m;
    }
  }
  try {
    model_config("resnet50");
    ADD_FAILURE() << "resnet50";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("did you mean"), std::string::npos) << e.what();
  }
}

TEST(ModelConfig, ParamCountMatchesBuiltModels) {
  std::vector<ModelConfig> configs;
  for (const char* name : {"convnext_atto", "wtconvnext_atto", "wtconvnext_fmnist"}) configs.push_back(model_config(name));
  ModelConfig odd = model_config("wtconvnext_femto");
  odd.depths = {1, 0, 2};
  odd.dims = {8, 12, 20};
  odd.wt_levels = {3, 1, 2};
  odd.kernel_size = 3;
  odd.patch_size = 2;
  odd.in_chans = 1;
  odd.num_classes = 7;
  odd.ls_init_value = std::nullopt;  // no gamma
  configs.push_back(odd);
  ModelConfig plain = odd;
  plain.wtconv = false;
  configs.push_back(plain);
  for (const ModelConfig& c : configs) {
    ConvNeXt m(c, 0);
    const ParamCount n = param_count(c);
    EXPECT_EQ(n.trainable, m.num_trainable()) << c.model << " " << c.to_json();
    EXPECT_EQ(n.fixed, m.num_fixed()) << c.model << " " << c.to_json();
  }
  // timm's and the reference's counts for the -T models (without building 28M parameters)
  EXPECT_EQ(param_count(model_config("convnext_tiny")).trainable, 28589128);
  EXPECT_EQ(param_count(model_config("wtconvnext_tiny")).trainable, 30383656);
  EXPECT_EQ(param_count(model_config("wtconvnext_tiny")).fixed, 211968);
}

TEST(ModelConfig, WTConvLevelAdvice) {
  // 224 px: every level of every stage sees more than one pixel (56 -> 2, 28 -> 2, 14 -> 2, 7 -> 2)
  EXPECT_EQ(wtconv_level_advice(model_config("wtconvnext_tiny"), 224), "");
  EXPECT_EQ(wtconv_level_advice(model_config("convnext_atto"), 32), "");  // no WTConv
  // 32 px: stage maps 8, 4, 2, 1: levels past a 1x1 map, and a stage that is 1x1 itself
  const std::string a = wtconv_level_advice(model_config("wtconvnext_atto"), 32);
  EXPECT_NE(a.find("wt_levels [3, 2, 1, 1]"), std::string::npos) << a;
  EXPECT_NE(a.find("stage 3 "), std::string::npos) << a;
  EXPECT_NE(a.find("[8, 4, 2, 1]"), std::string::npos) << a;
  // levels that fit: only the 1x1 stage is named; wt_levels 1 is not advised as "fewer"
  EXPECT_EQ(wtconv_level_advice(model_config("wtconvnext_fmnist"), 28), "");  // the default job's model
  ModelConfig c = model_config("wtconvnext_fmnist");
  c.depths = {2, 2, 2};  // the earlier default: 28 px -> maps 7, 3, 1
  c.dims = {48, 96, 192};
  c.wt_levels = {1, 1, 1};
  const std::string f = wtconv_level_advice(c, 28);
  EXPECT_EQ(f.find("wt_levels ["), std::string::npos) << f;
  EXPECT_NE(f.find("stage 2 "), std::string::npos) << f;
  EXPECT_NE(f.find("img_size"), std::string::npos) << f;
  c.depths = {1, 1};  // 7 -> 4 -> 2 -> (1): three levels see data; 3 -> 2 -> (1): two
  c.dims = {8, 16};
  c.wt_levels = {3, 2};
  EXPECT_EQ(wtconv_level_advice(c, 28), "");
  c.wt_levels = {4, 3};
  EXPECT_NE(wtconv_level_advice(c, 28).find("wt_levels [3, 2]"), std::string::npos);
}

TEST(ModelConfig, ModelWarnsOncePerModel) {
  auto captured = std::make_unique<test::CapturedLog>();
  ModelConfig c = model_config("wtconvnext_atto");
  c.dims = {4, 8, 12, 16};
  ConvNeXt m(c, 0);
  Tensor x = test::random({1, 32, 32, 3}, 3, DType::f32);
  m.forward(x);
  m.forward(x);
  ModelConfig fine = c;
  fine.wt_levels = {3, 2, 1, 1};
  fine.depths = {1, 1, 1};
  fine.dims = {4, 8, 12};
  fine.wt_levels = {3, 2, 1};
  ConvNeXt quiet(fine, 0);
  quiet.forward(x);  // maps 8, 4, 2: every level sees data
  const std::string log = captured->text();
  captured.reset();
  size_t lines = 0;
  for (char ch : log) lines += ch == '\n';
  EXPECT_EQ(lines, 1u) << log;
  EXPECT_NE(log.find("wt_levels [3, 2, 1, 1]"), std::string::npos) << log;
}

TEST(ModelConfig, NamesListEachFamilySmallestFirst) {
  const std::vector<std::string> want = {
      "convnext_atto",    "convnext_femto",  "convnext_pico",    "convnext_nano",
      "convnext_tiny",    "convnext_small",  "convnext_base",    "wtconvnext_atto",
      "wtconvnext_femto", "wtconvnext_pico", "wtconvnext_nano",  "wtconvnext_tiny",
      "wtconvnext_small", "wtconvnext_base", "wtconvnext_fmnist"};
  EXPECT_EQ(model_names(), want);
  // and each family grows in parameters along the list (timm's order is by size)
  const std::vector<std::string> names = model_names();
  for (size_t i = 1; i < 7; ++i)
    EXPECT_LT(param_count(model_config(names[i - 1])).trainable,
              param_count(model_config(names[i])).trainable)
        << names[i - 1] << " vs " << names[i];
}

}  // namespace
}  // namespace hg
