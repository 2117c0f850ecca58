// Model EMA (timm ModelEmaV3): the decay schedule, the update against the lerp formula computed
// here, the first update copying the model, misuse errors, and the copy leaving the model's
// one-time WTConv level advice to the model.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <sstream>

#include "captured_log.h"
#include "core/autograd.h"
#include "train/config.h"
#include "train/model_ema.h"
#include "train/trainer.h"

using namespace hg;

namespace {
ModelConfig small_model() {
  train::Config c = train::load_config(std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml");
  return train::model_config_from(c);
}

// Adds `delta * (i % 7 - 3)` to every element of every trainable tensor (a stand-in for a step).
void perturb(ConvNeXt& m, float delta) {
  autograd::NoGradGuard no_grad;
  for (const ParamRef& p : m.named_tensors()) {
    if (!p.trainable) continue;
    std::vector<float> v = p.tensor.to_vector<float>();
    for (size_t i = 0; i < v.size(); ++i)
      v[i] += delta * static_cast<float>(static_cast<int>(i % 7) - 3);
    Tensor t = p.tensor;
    t.copy_(Tensor::from_vector<float>(p.tensor.shape(), v));
  }
}

std::vector<std::vector<float>> values(const ConvNeXt& m) {
  std::vector<std::vector<float>> out;
  for (const ParamRef& p : m.named_tensors()) out.push_back(p.tensor.to_vector<float>());
  return out;
}
}  // namespace

TEST(ModelEma, DecaySchedule) {
  ConvNeXt model(small_model(), 1);
  train::ModelEma plain(model, 0.9998, false), warm(model, 0.9998, true);
  EXPECT_EQ(plain.decay_at(0), 0.0);
  EXPECT_EQ(plain.decay_at(1), 0.0);  // the first update copies the model
  EXPECT_EQ(plain.decay_at(2), 0.9998);
  EXPECT_EQ(plain.decay_at(100000), 0.9998);
  EXPECT_EQ(warm.decay_at(1), 0.0);
  EXPECT_DOUBLE_EQ(warm.decay_at(2), 1.0 - std::pow(2.0, -2.0 / 3.0));  // 0.37
  EXPECT_DOUBLE_EQ(warm.decay_at(1001), 1.0 - std::pow(1001.0, -2.0 / 3.0));
  EXPECT_EQ(warm.decay_at(100000000), 0.9998);  // capped at model_ema_decay
  EXPECT_THROW(train::ModelEma(model, 1.5, false), Error);
}

TEST(ModelEma, UpdateIsLerpTowardsTheModel) {
  ConvNeXt model(small_model(), 2);
  train::ModelEma ema(model, 0.9, false);
  EXPECT_EQ(values(ema.module()), values(model));  // starts as a copy
  perturb(model, 0.01f);
  ema.update(model, 1);
  EXPECT_EQ(values(ema.module()), values(model));  // step 1: decay 0, an exact copy
  const auto before = values(ema.module());
  perturb(model, 0.05f);
  ema.update(model, 7);
  const auto after = values(ema.module()), target = values(model);
  const float w = static_cast<float>(1.0 - 0.9);
  size_t changed = 0;
  for (size_t t = 0; t < after.size(); ++t)
    for (size_t i = 0; i < after[t].size(); ++i) {
      const float want = before[t][i] + w * (target[t][i] - before[t][i]);
      ASSERT_EQ(after[t][i], want) << t << "," << i;
      changed += after[t][i] != before[t][i];
    }
  EXPECT_GT(changed, 1000u);
  // Fixed buffers (the Haar filters) follow too, and stay what they are.
  const std::vector<ParamRef> tensors = ema.module().named_tensors();
  int fixed = 0;
  for (size_t t = 0; t < tensors.size(); ++t)
    if (!tensors[t].trainable) {
      EXPECT_EQ(after[t], before[t]) << tensors[t].name;
      ++fixed;
    }
  EXPECT_GT(fixed, 0);  // the smoke model is a WTConvNeXt
}

TEST(ModelEma, RefusesAnotherModel) {
  ConvNeXt a(small_model(), 3), b(small_model(), 4);
  train::ModelEma ema(a, 0.99, false);
  EXPECT_THROW(ema.update(b, 2), Error);
  ema.set(b);  // set() copies any model of the same structure
  EXPECT_EQ(values(ema.module()), values(b));
}

TEST(ModelEma, CopyLeavesTheLevelAdviceToTheModel) {
  // The WTConv level advice comes once per run: the model says it, the EMA's forward (evaluation
  // each epoch) must not say it again.
  ModelConfig c = model_config("wtconvnext_atto");
  c.dims = {4, 8, 12, 16};  // 32 px: stage maps 8, 4, 2, 1: levels past a 1x1 map
  ConvNeXt model(c, 0);
  train::ModelEma ema(model, 0.9, false);
  std::string log;
  {
    const test::CapturedLog captured;
    Tensor x = Tensor::zeros({1, 32, 32, 3}, DType::f32);
    model.forward(x);
    ema.module().forward(x);
    log = captured.text();
  }
  size_t lines = 0;
  for (char ch : log) lines += ch == '\n';
  EXPECT_EQ(lines, 1u) << log;
  EXPECT_NE(log.find("WTConv levels past a 1x1 map"), std::string::npos) << log;
}
