// Optimizers: AdamW and SGD against plain-loop re-computations of the textbook update rules,
// weight-decay groups (timm rule), gradient clipping, zero_grad, state memory category and state
// save / load through safetensors.
#include "train/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "core/autograd.h"
#include "core/memory.h"
#include "core/ops.h"
#include "core/safetensors.h"
#include "layers/module.h"
#include "test_util.h"

using namespace hg;
using namespace hg::train;

namespace {
void set_grad(const Tensor& p, const Tensor& g) { p.grad_slot()->grad = g.clone(); }

// AdamW (Loshchilov & Hutter) in its textbook form: bias-corrected moments m_hat, v_hat.
struct RefAdamW {
  explicit RefAdamW(std::vector<double> p0) : p(std::move(p0)) {}
  std::vector<double> p, m, v;
  int step = 0;
  void update(const std::vector<double>& g, double lr, double wd, double b1, double b2,
              double eps) {
    if (m.empty()) m.assign(p.size(), 0.0), v.assign(p.size(), 0.0);
    ++step;
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] -= lr * wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      const double mhat = m[i] / (1 - std::pow(b1, step)), vhat = v[i] / (1 - std::pow(b2, step));
      p[i] -= lr * mhat / (std::sqrt(vhat) + eps);
    }
  }
};

// SGD with momentum as documented by PyTorch (dampening 0).
struct RefSGD {
  explicit RefSGD(std::vector<double> p0) : p(std::move(p0)) {}
  std::vector<double> p, buf;
  void update(const std::vector<double>& g_in, double lr, double mom, double wd, bool nesterov) {
    const bool first = buf.empty();
    if (first) buf.assign(p.size(), 0.0);
    for (size_t i = 0; i < p.size(); ++i) {
      double g = g_in[i] + wd * p[i];
      if (mom != 0) {
        buf[i] = first ? g : mom * buf[i] + g;
        g = nesterov ? g + mom * buf[i] : buf[i];
      }
      p[i] -= lr * g;
    }
  }
};

Tensor param(const Shape& s, uint64_t seed, DType dt = DType::f64) {
  Tensor t = test::random(s, seed, dt);
  t.requires_grad_();
  return t;
}
}  // namespace

TEST(AdamW, ThreeStepsMatchHandComputationF64) {
  Tensor w = param({3, 4}, 1), b = param({4}, 2);
  std::vector<ParamGroup> groups{{{w}, {"fc.weight"}, 1e-2, 0.05}, {{b}, {"fc.bias"}, 2e-2, 0.0}};
  AdamW opt(groups, 0.9, 0.99, 1e-6);
  RefAdamW rw(w.to_vector<double>()), rb(b.to_vector<double>());
  for (int s = 0; s < 3; ++s) {
    Tensor gw = test::random({3, 4}, 10 + s, DType::f64, -2, 2), gb = test::random({4}, 20 + s);
    set_grad(w, gw);
    set_grad(b, gb);
    opt.step();
    rw.update(gw.to_vector<double>(), 1e-2, 0.05, 0.9, 0.99, 1e-6);
    rb.update(gb.to_vector<double>(), 2e-2, 0.0, 0.9, 0.99, 1e-6);
    EXPECT_LT(test::rel_error(w, Tensor::from_vector(w.shape(), rw.p)), 1e-13) << s;
    EXPECT_LT(test::rel_error(b, Tensor::from_vector(b.shape(), rb.p)), 1e-13) << s;
  }
}

TEST(AdamW, F32FollowsF64AndLrIsSettablePerStep) {
  Tensor w64 = param({5, 3}, 3), w32 = w64.to(DType::f32);
  w32.requires_grad_();
  AdamW a64({{{w64}, {}, 1e-3, 0.1}}), a32({{{w32}, {}, 1e-3, 0.1}});
  RefAdamW ref(w64.to_vector<double>());
  for (int s = 0; s < 4; ++s) {
    const double lr = 1e-3 * (s + 1);  // a schedule
    a64.param_groups()[0].lr = lr;
    a32.set_lr(lr);
    Tensor g = test::random({5, 3}, 30 + s);
    set_grad(w64, g);
    set_grad(w32, g.to(DType::f32));
    a64.step();
    a32.step();
    ref.update(g.to_vector<double>(), lr, 0.1, 0.9, 0.999, 1e-8);
  }
  EXPECT_LT(test::rel_error(w64, Tensor::from_vector(w64.shape(), ref.p)), 1e-13);
  EXPECT_LT(test::rel_error(w32, w64), 1e-6);
}

// lr 0 (timm trains with it) leaves every weight bit-identical: AdamW's decoupled decay is
// scaled by lr (PyTorch: p *= 1 - lr * wd), so it does nothing either; SGD's L2 term goes through
// lr too. Several steps (moments built up), large gradients, both dtypes, a weight of 0. (A weight
// of -0.0 may become +0.0, as in PyTorch: -0 - (-0) is +0.)
TEST(Optimizers, LrZeroLeavesWeightsBitIdentical) {
  for (DType dt : {DType::f32, DType::f64})
    for (const std::string kind : {"adamw", "sgd", "momentum"}) {
      SCOPED_TRACE(kind + (dt == DType::f32 ? " f32" : " f64"));
      std::vector<double> v = test::random({3, 7}, 40, DType::f64, -3, 3).to_vector<double>();
      v[0] = 0.0;
      Tensor w = Tensor::from_vector({3, 7}, v).to(dt), b = param({7}, 41, dt);
      w.requires_grad_();
      const Tensor w0 = w.clone(), b0 = b.clone();
      // a layer_decay-style lr_scale, and a decay group: 0 x anything is still 0
      std::vector<ParamGroup> groups{{{w}, {"w"}, 1e-2, 0.05}, {{b}, {"b"}, 1e-2, 0.0}};
      groups[0].lr_scale = 0.5;
      std::unique_ptr<Optimizer> opt;
      if (kind == "adamw")
        opt = std::make_unique<AdamW>(groups);
      else
        opt = std::make_unique<SGD>(groups, kind == "sgd" ? 0.9 : 0.0, kind == "sgd");
      opt->set_lr(0.0);
      for (int s = 0; s < 3; ++s) {
        set_grad(w, test::random({3, 7}, 50 + s, dt, -100, 100));
        set_grad(b, test::random({7}, 60 + s, dt));
        opt->step();
      }
      for (const auto& [now, before] : {std::pair(w, w0), std::pair(b, b0)}) {
        ASSERT_EQ(now.nbytes(), before.nbytes());
        EXPECT_EQ(std::memcmp(now.data_ptr(), before.data_ptr(), now.nbytes()), 0);
      }
    }
}

TEST(AdamW, SkipsParamsWithoutGradAndZeroGradKeepsMemory) {
  Tensor a = param({4}, 4), b = param({4}, 5);
  const std::vector<double> b_before = b.to_vector<double>();
  AdamW opt({{{a, b}, {"a", "b"}, 1e-2, 0.0}});
  set_grad(a, test::random({4}, 6));
  opt.step();
  EXPECT_EQ(b.to_vector<double>(), b_before);
  std::vector<std::pair<std::string, Tensor>> st = opt.state_dict();
  ASSERT_EQ(st.size(), 3u);  // only a has state
  EXPECT_EQ(st[0].first, "a.exp_avg");
  const void* mem = a.grad().data_ptr();
  opt.zero_grad();
  EXPECT_EQ(a.grad().data_ptr(), mem);
  for (double v : a.grad().to_vector<double>()) EXPECT_EQ(v, 0.0);
}

TEST(AdamW, StateLivesInOptimizerStateMemory) {
  Tensor w = param({64, 32}, 7, DType::f32);
  AdamW opt({{{w}, {}, 1e-3, 0.0}});
  set_grad(w, test::random({64, 32}, 8, DType::f32));
  const int64_t before =
      memory::stats(Device::cpu).current[static_cast<int>(Category::optimizer_state)];
  opt.step();
  const int64_t after =
      memory::stats(Device::cpu).current[static_cast<int>(Category::optimizer_state)];
  EXPECT_GE(after - before, 2 * 64 * 32 * 4);  // exp_avg + exp_avg_sq
  opt.step();                                  // allocated once
  EXPECT_EQ(memory::stats(Device::cpu).current[static_cast<int>(Category::optimizer_state)], after);
}

TEST(AdamW, StateRoundTripThroughSafetensorsResumesExactly) {
  Tensor w = param({3, 3}, 9), b = param({3}, 10);
  auto groups_of = [](const Tensor& w_, const Tensor& b_) {
    return std::vector<ParamGroup>{{{w_}, {"w"}, 1e-2, 0.05}, {{b_}, {"b"}, 1e-2, 0.0}};
  };
  AdamW a(groups_of(w, b));
  for (int s = 0; s < 2; ++s) {
    set_grad(w, test::random({3, 3}, 40 + s));
    set_grad(b, test::random({3}, 50 + s));
    a.step();
  }
  // Resume: fresh parameters with the same values, state from the file image.
  Tensor w2 = w.clone(), b2 = b.clone();
  w2.requires_grad_();
  b2.requires_grad_();
  AdamW resumed(groups_of(w2, b2));
  safetensors::File f = safetensors::parse(safetensors::serialize(a.state_dict("optim.")), "state");
  EXPECT_EQ(f.tensors.count("optim.w.exp_avg_sq"), 1u);
  EXPECT_EQ(f.tensors.at("optim.b.step").item(), 2.0);
  f.tensors["model.w"] = w;  // keys outside the prefix are ignored
  resumed.load_state_dict(f.tensors, "optim.");
  Tensor gw = test::random({3, 3}, 60), gb = test::random({3}, 61);
  set_grad(w, gw);
  set_grad(b, gb);
  set_grad(w2, gw);
  set_grad(b2, gb);
  a.step();
  resumed.step();
  EXPECT_EQ(w2.to_vector<double>(), w.to_vector<double>());
  EXPECT_EQ(b2.to_vector<double>(), b.to_vector<double>());

  std::map<std::string, Tensor> bad = f.tensors;
  bad["optim.nothing.exp_avg"] = test::random({3}, 1);
  EXPECT_THROW(resumed.load_state_dict(bad, "optim."), Error);
  bad = f.tensors;
  bad.erase("optim.w.step");
  EXPECT_THROW(resumed.load_state_dict(bad, "optim."), Error);
  bad = f.tensors;
  bad["optim.b.exp_avg"] = test::random({4}, 2);
  EXPECT_THROW(resumed.load_state_dict(bad, "optim."), Error);
  // b's state without w's: w would resume its moments from zero, unsaid
  bad = f.tensors;
  for (const char* k : {"optim.w.exp_avg", "optim.w.exp_avg_sq", "optim.w.step"}) bad.erase(k);
  const std::string msg = test::error_of([&] { resumed.load_state_dict(bad, "optim."); });
  EXPECT_NE(msg.find("1 of the 2 parameters have none (the first: 'optim.w.*')"), std::string::npos)
      << msg;
}

// State no step can leave (a damaged or edited checkpoint) was taken as it was: a negative or
// fractional step count (a NaN one was cast to an integer, undefined), a negative second moment
// or a NaN moment gave a NaN update at the resumed run's first step, whose divergence message then
// pointed back at that checkpoint. Each is refused naming its key, as a mis-shaped moment is.
TEST(AdamW, LoadRefusesStateNoStepLeavesNamingTheKey) {
  Tensor w = param({2, 2}, 3);
  AdamW a({{{w}, {"w"}, 1e-2, 0.0}});
  set_grad(w, test::random({2, 2}, 4));
  a.step();
  std::map<std::string, Tensor> good;
  for (auto& [k, t] : a.state_dict("optim.")) good[k] = t;
  const auto error_with = [&](const std::string& key, const Tensor& t) {
    std::map<std::string, Tensor> bad = good;
    bad[key] = t;
    AdamW fresh({{{w}, {"w"}, 1e-2, 0.0}});
    return test::error_of([&] { fresh.load_state_dict(bad, "optim."); });
  };
  const auto scalar = [](double v) { return Tensor::from_vector<double>({}, {v}); };
  const double nan = std::nan("");
  EXPECT_NE(error_with("optim.w.exp_avg", test::random({4}, 5)).find("'optim.w.exp_avg'"),
            std::string::npos);
  EXPECT_NE(error_with("optim.w.step", scalar(-3)).find("'optim.w.step'"), std::string::npos);
  EXPECT_NE(error_with("optim.w.step", scalar(1.5)).find("'optim.w.step'"), std::string::npos);
  EXPECT_NE(error_with("optim.w.step", scalar(nan)).find("'optim.w.step'"), std::string::npos);
  // a whole count past 2^53 (no double holds it exactly) was refused as "no whole number >= 0"
  const std::string huge =
      error_with("optim.w.step", Tensor::from_vector<int64_t>({}, {int64_t(1) << 60}));
  EXPECT_NE(huge.find("a whole number >= 0 and < 2^53, got 1.152921504606847e+18"),
            std::string::npos)
      << huge;
  Tensor negative = good["optim.w.exp_avg_sq"].clone();
  negative.data<double>()[1] = -1;
  EXPECT_NE(error_with("optim.w.exp_avg_sq", negative).find("'optim.w.exp_avg_sq'"),
            std::string::npos);
  Tensor not_finite = good["optim.w.exp_avg"].clone();
  not_finite.data<double>()[0] = nan;
  EXPECT_NE(error_with("optim.w.exp_avg", not_finite).find("'optim.w.exp_avg'"), std::string::npos);
  EXPECT_EQ(error_with("optim.w.step", scalar(1)), "");  // the file's own values load
}

TEST(SGD, MomentumNesterovAndWeightDecayMatchHandComputation) {
  for (bool nesterov : {false, true})
    for (double mom : {0.0, 0.9}) {
      if (nesterov && mom == 0) continue;
      Tensor w = param({2, 5}, 11);
      SGD opt({{{w}, {"w"}, 0.1, 1e-2}}, mom, nesterov);
      RefSGD ref(w.to_vector<double>());
      for (int s = 0; s < 3; ++s) {
        Tensor g = test::random({2, 5}, 70 + s);
        set_grad(w, g);
        opt.step();
        ref.update(g.to_vector<double>(), 0.1, mom, 1e-2, nesterov);
      }
      EXPECT_LT(test::rel_error(w, Tensor::from_vector(w.shape(), ref.p)), 1e-13)
          << mom << nesterov;
      EXPECT_EQ(opt.state_dict().size(), mom != 0 ? 1u : 0u);
    }
  EXPECT_THROW(SGD({{{param({2}, 1)}, {}, 0.1, 0.0}}, 0.0, true), Error);
}

TEST(SGD, StateRoundTrip) {
  Tensor w = param({4}, 12);
  SGD a({{{w}, {"w"}, 0.1, 0.0}}, 0.9);
  set_grad(w, test::random({4}, 13));
  a.step();
  Tensor w2 = w.clone();
  w2.requires_grad_();
  SGD b({{{w2}, {"w"}, 0.1, 0.0}}, 0.9);
  std::map<std::string, Tensor> st;
  for (auto& [k, t] : a.state_dict()) st[k] = t;
  b.load_state_dict(st);
  Tensor g = test::random({4}, 14);
  set_grad(w, g);
  set_grad(w2, g);
  a.step();
  b.step();
  EXPECT_EQ(w2.to_vector<double>(), w.to_vector<double>());
}

TEST(ParamGroups, TimmNoWeightDecayRule) {
  auto ref = [](const std::string& name, const Shape& s, bool nwd = false, bool trainable = true) {
    return ParamRef{name, test::random(s, 1).requires_grad_(), trainable, nwd};
  };
  std::vector<ParamRef> refs{
      ref("stem.0.weight", {8, 3, 4, 4}),                               // decay
      ref("stem.0.bias", {8}),                                          // ndim 1
      ref("stages.0.blocks.0.gamma", {8}),                              // layer scale
      ref("stages.0.blocks.0.conv_dw.wavelet_scale.0", {1, 32, 1, 1}),  // 4-D but a scale
      ref("stages.0.blocks.0.conv_dw.base_scale", {1, 8, 1, 1}),
      ref("stages.0.blocks.0.norm.weight", {8}, true),
      ref("stages.0.blocks.0.conv_dw.wt_filter", {32, 1, 2, 2}, false, false),  // fixed buffer
      ref("head.fc.weight", {10, 8}),                                           // decay
      ref("odd.bias", {2, 2}),                                                  // name rule
  };
  std::vector<ParamGroup> g = param_groups_weight_decay(refs, 4e-3, 0.05);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].names, (std::vector<std::string>{"stem.0.weight", "head.fc.weight"}));
  EXPECT_EQ(g[0].weight_decay, 0.05);
  EXPECT_EQ(g[1].names.size(), 6u);
  EXPECT_EQ(g[1].weight_decay, 0.0);
  EXPECT_EQ(g[0].lr, 4e-3);
  EXPECT_EQ(g[1].lr, 4e-3);
  EXPECT_TRUE(g[0].params[1].id() == refs[7].tensor.id());
  AdamW opt(g);
  EXPECT_EQ(opt.parameters().size(), 8u);
  EXPECT_THROW(AdamW({{{refs[0].tensor, refs[0].tensor}, {}, 1e-3, 0.0}}), Error);  // duplicate
}

TEST(ClipGradNorm, ScalesToMaxNormAndReturnsTotal) {
  Tensor a = param({3, 4}, 15), b = param({5}, 16), c = param({2}, 17);
  Tensor ga = test::random({3, 4}, 18, DType::f64, -3, 3),
         gb = test::random({5}, 19, DType::f64, -3, 3);
  set_grad(a, ga);
  set_grad(b, gb);  // c has no gradient: ignored
  double ss = 0;
  for (const Tensor& g : {ga, gb})
    for (double v : g.to_vector<double>()) ss += v * v;
  const double total = std::sqrt(ss), max_norm = 0.5 * total;
  Tensor t = clip_grad_norm({a, b, c}, max_norm);
  EXPECT_NEAR(t.item(), total, 1e-12 * total);
  const double coef = max_norm / (total + 1e-6);
  EXPECT_LT(test::rel_error(a.grad(), ops::scale(ga, coef)), 1e-14);
  EXPECT_LT(test::rel_error(b.grad(), ops::scale(gb, coef)), 1e-14);
  // Under the bound: coefficient clamped to 1, gradients unchanged.
  const std::vector<double> before = a.grad().to_vector<double>();
  EXPECT_NEAR(clip_grad_norm({a, b}, 10 * total).item(), max_norm, 1e-6);
  EXPECT_EQ(a.grad().to_vector<double>(), before);
  EXPECT_THROW(clip_grad_norm({a}, 0.0), Error);
}

// clip_gradients: on the CPU no optimizer fuses the clip, so it is clip_grad_norm now (the
// gradients scaled in memory); the fused CUDA path: tests/gpu/optimizer_test.cpp.
TEST(ClipGradNorm, ClipGradientsFallsBackWhereNothingFuses) {
  Tensor a = param({3, 4}, 25);
  const Tensor ga = test::random({3, 4}, 26, DType::f64, -3, 3);
  set_grad(a, ga);
  double ss = 0;
  for (double v : ga.to_vector<double>()) ss += v * v;
  AdamW opt({{{a}, {"a"}, 1e-3, 0.0}});
  EXPECT_FALSE(opt.clip_in_next_step(1.0));
  clip_gradients(opt, 0.5);
  EXPECT_LT(test::rel_error(a.grad(), ops::scale(ga, 0.5 / (std::sqrt(ss) + 1e-6))), 1e-14);
  EXPECT_THROW(clip_gradients(opt, 0.0), Error);
}
