// Gradient accumulation in the trainer (grad_accum_steps) as timm's train_one_epoch: each
// micro-batch's loss is divided by the number of micro-batches of its update, the last update of
// an epoch (fewer micro-batches when the epoch's steps do not divide evenly) by its own count. The
// optimizer is SGD with momentum: AdamW's update does not change when every gradient is scaled by
// one factor, so under AdamW a missing or wrong division could not be seen.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/safetensors.h"
#include "train/config.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace hg;

namespace {

using Tensors = std::map<std::string, std::vector<double>>;

class GradAccum : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("hg_grad_accum_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // The smoke config with SGD (classical momentum 0.9) at a constant lr, no weight decay and the
  // layer scale starting at 1 (timm's 1e-6 leaves the blocks' gradients near zero, so only the
  // stem and head would show a wrong scale). No loader threads: runs of a few steps.
  train::Config config(int64_t batch, int64_t accum, int64_t steps, double lr,
                       int64_t epochs) const {
    train::Config c = train::load_config(std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml");
    c.device = "cpu";
    c.workers = 0;
    c.opt = "momentum";
    c.sched = "none";
    c.lr = lr;
    c.weight_decay = 0.0;
    c.ls_init_value = 1.0;
    c.batch_size = batch;
    c.grad_accum_steps = accum;
    c.max_steps_per_epoch = steps;
    c.epochs = epochs;
    c.min_lr = 0.0;  // unused by sched none, but a min_lr above lr (the lr-0 runs) is refused
    return c;
  }

  // Trains `c` into a folder of its own; every tensor of its last.safetensors (weights and
  // optimizer.*.momentum_buffer) by name.
  Tensors train_and_load(train::Config c, const std::string& name) {
    c.output = (root_ / name).string();
    train::TrainOptions o;
    o.plain_output = true;
    const train::TrainResult r = train::train(c, o);
    Tensors out;
    for (const auto& [k, t] :
         safetensors::load((fs::path(r.run_dir) / "last.safetensors").string()).tensors)
      if (t.dtype() == DType::f32) out[k] = t.to_vector<double>();
    return out;
  }

  fs::path root_;
};

// The largest difference of an element of a and b (same names and sizes) over the root mean
// square of its tensor in a: relative to the tensor's scale, so that elements near zero (many
// gradients) count by how far they move beside their neighbours.
double max_scaled_diff(const Tensors& a, const Tensors& b, std::string* where = nullptr) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (const auto& [k, x] : a) {
    EXPECT_TRUE(b.count(k)) << k;
    if (!b.count(k) || b.at(k).size() != x.size()) {
      ADD_FAILURE() << k << ": missing or another size";
      continue;
    }
    double rms = 0;
    for (double v : x) rms += v * v;
    rms = rms > 0 ? std::sqrt(rms / static_cast<double>(x.size())) : 1.0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double d = std::abs(x[i] - b.at(k)[i]) / rms;
      if (d > worst && where) *where = k + "[" + std::to_string(i) + "]";
      worst = std::max(worst, d);
    }
  }
  return worst;
}

// The momentum buffers of a checkpoint (optimizer.<name>.momentum_buffer), by parameter name.
Tensors buffers(const Tensors& checkpoint) {
  Tensors out;
  const std::string head = "optimizer.", tail = ".momentum_buffer";
  for (const auto& [k, v] : checkpoint)
    if (k.rfind(head, 0) == 0 && k.size() > head.size() + tail.size() &&
        k.compare(k.size() - tail.size(), tail.size(), tail) == 0)
      out[k.substr(head.size(), k.size() - head.size() - tail.size())] = v;
  return out;
}

// a + s * b, element by element (same names and sizes).
Tensors axpy(const Tensors& a, double s, const Tensors& b) {
  Tensors out = a;
  for (auto& [k, v] : out)
    for (size_t i = 0; i < v.size(); ++i) v[i] += s * b.at(k).at(i);
  return out;
}

}  // namespace

// The tolerance of both tests (largest difference over the tensor's rms, max_scaled_diff): sums of
// the same per-image gradients in another order differ by f32 rounding, measured at up to 1.3e-5
// (a momentum buffer, after 12 micro-steps) on the 2-core CPU machine; a factor 2 on the gradient
// moves them by 3 or more.
constexpr double kTolerance = 1e-4;

// batch 4 x 2 micro-batches per update trains as batch 8: the same 8 images per update, the loss
// of each half divided by 2 so that the accumulated gradient is the mean over the 8. 2 epochs of 3
// updates at lr 0.05; every tensor of the checkpoints (weights and momentum buffers) compared.
TEST_F(GradAccum, TwoMicroBatchesOfFourTrainAsOneBatchOfEight) {
  const Tensors one = train_and_load(config(8, 1, 3, 0.05, 2), "b8");
  const Tensors accum = train_and_load(config(4, 2, 6, 0.05, 2), "b4x2");
  ASSERT_FALSE(buffers(one).empty()) << "no momentum buffer in the checkpoint";
  // Without the division the accumulated gradient is twice the mean; under SGD with momentum and
  // no weight decay that is exactly the run at twice the lr. It must land far outside the
  // tolerance (measured: 13.6), or this test could not tell the division from its absence.
  const Tensors doubled = train_and_load(config(8, 1, 3, 0.1, 2), "b8_lr2x");
  EXPECT_GT(max_scaled_diff(one, doubled), 1000 * kTolerance)
      << "a gradient twice as large barely changes the run";
  std::string where;
  EXPECT_LT(max_scaled_diff(one, accum, &where), kTolerance) << where;
}

// An epoch whose steps do not divide by grad_accum_steps ends with a shorter update, whose loss
// timm divides by its own count (train_one_epoch: accum_steps = last_accum_steps for the last
// len(loader) % grad_accum_steps batches): its gradient is the mean over its images, as a full
// update's is.
//
// At lr 0 the weights never move, so every gradient is taken at the initial weights and a mean
// over images is linear in the per-image gradients; SGD's momentum buffer after the updates'
// gradients G1 .. Gu is sum_k 0.9^(u-k) Gk (torch: the first update sets it to G1). buffer(B, A, S)
// is that buffer after S steps of B images, A micro-batches per update, in one epoch; G(i-j) the
// mean gradient over the epoch's images i to j.
TEST_F(GradAccum, TheShorterLastUpdateOfAnEpochIsDividedByItsOwnCountAsTimm) {
  const double mu = 0.9;
  std::map<std::string, Tensors> made;
  const auto buffer = [&](int64_t batch, int64_t accum, int64_t steps) {
    // appended one piece at a time: `"b" + std::to_string(...)` set off GCC 12's false -Wrestrict
    std::string name = "b";
    name += std::to_string(batch);
    name += "x";
    name += std::to_string(accum);
    name += "_";
    name += std::to_string(steps);
    name += "steps";
    if (!made.count(name))
      made[name] = buffers(train_and_load(config(batch, accum, steps, 0.0, 1), name));
    return made.at(name);
  };
  ASSERT_FALSE(buffer(8, 1, 2).empty()) << "no momentum buffer in the checkpoint";
  // G(8-15) and G(16-23) from batch-8 runs: a run's last update is its buffer less mu x the buffer
  // of the run one update shorter
  const Tensors g0_7 = buffer(8, 1, 1), g8_15 = axpy(buffer(8, 1, 2), -mu, buffer(8, 1, 1)),
                g16_23 = axpy(buffer(8, 1, 3), -mu, buffer(8, 1, 2)),
                g16_19 = axpy(buffer(4, 1, 5), -mu, buffer(4, 1, 4)), g0_15 = buffer(16, 1, 1);
  std::string where;
  // 6 steps of 4 images, 4 micro-batches per update: images 0-15, then a last update of 2
  // micro-batches (16-23) divided by 2; by 4 it would be half the mean, undivided twice.
  const Tensors two_of_four = axpy(g16_23, mu, g0_15);
  EXPECT_GT(max_scaled_diff(two_of_four, axpy(two_of_four, -0.5, g16_23)), 1000 * kTolerance)
      << "the last update is too small beside the first to show its scale";
  EXPECT_LT(max_scaled_diff(two_of_four, buffer(4, 4, 6), &where), kTolerance) << where;
  // 5 steps of 4 images, 2 micro-batches per update: images 0-7, 8-15, then a last update of one
  // micro-batch (16-19), not divided (timm: accum_steps 1); by 2 it would be half the mean.
  const Tensors one_of_two = axpy(g16_19, mu, axpy(g8_15, mu, g0_7));
  EXPECT_GT(max_scaled_diff(one_of_two, axpy(one_of_two, -0.5, g16_19)), 1000 * kTolerance)
      << "the last update is too small beside the others to show its scale";
  EXPECT_LT(max_scaled_diff(one_of_two, buffer(4, 2, 5), &where), kTolerance) << where;
}
