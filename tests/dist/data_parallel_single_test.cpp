// The data-parallel code path in one process (dist_force: buckets, hooks, reductions over one
// rank, ZeRO-1 over one rank) must train exactly like the plain single-process trainer; and the
// ZeRO-1 optimizer's state round-trips through AdamW's state_dict keys.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/autograd.h"
#include "core/safetensors.h"
#include "dist_util.h"
#include "train/config.h"
#include "train/data_parallel.h"
#include "train/grad_buckets.h"
#include "train/trainer.h"
#include "train/zero_optimizer.h"

namespace fs = std::filesystem;
using namespace hg;

namespace {

train::Config smoke(const fs::path& out) {
  train::Config c = train::load_config(std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml");
  c.output = out.string();
  c.device = "cpu";
  c.workers = 0;
  c.epochs = 2;
  c.clip_grad = 1.0;
  return c;
}

std::string file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// summary.csv without the two measured columns (img/s, memory): epoch .. lr
std::string deterministic_summary(const fs::path& p) {
  std::istringstream in(file(p));
  std::string out;
  for (std::string line; std::getline(in, line);) {
    std::stringstream cells(line);
    std::string cell;
    for (int i = 0; i < 6 && std::getline(cells, cell, ','); ++i) out += cell + ",";
    out += "\n";
  }
  return out;
}

class DataParallelSingle : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("hg_dp1_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  train::TrainResult run(train::Config c, const std::string& name) {
    c.output = (root_ / name).string();
    train::TrainOptions o;
    o.plain_output = true;
    return train::train(c, o);
  }
  fs::path root_;
};

}  // namespace

TEST_F(DataParallelSingle, ForcedPathTrainsExactlyLikeThePlainTrainer) {
  const train::Config base = smoke(root_);
  const auto plain = run(base, "plain");
  train::Config dp = base;
  dp.dist_force = true;
  dp.dist_bucket_mb = 0.002;  // ~2 KiB: many buckets, so the hook order matters
  dp.dist_check_every = 1;
  const auto forced = run(dp, "dp");
  train::Config z = dp;
  z.zero_stage = 1;
  const auto zero = run(z, "zero");
  const std::string ref = deterministic_summary(fs::path(plain.run_dir) / "summary.csv");
  EXPECT_EQ(deterministic_summary(fs::path(forced.run_dir) / "summary.csv"), ref);
  // ZeRO's clip norm sums the squares bucket by bucket: equal up to rounding
  test::expect_summaries_match(fs::path(plain.run_dir) / "summary.csv", fs::path(zero.run_dir) / "summary.csv", 1e-6,
                               "ZeRO-1 on one rank vs plain");
  // the weights and the optimizer state of the checkpoints agree (ZeRO saves AdamW's keys)
  auto a = safetensors::load((fs::path(plain.run_dir) / "last.safetensors").string());
  for (const auto* other : {&forced, &zero}) {
    auto b = safetensors::load((fs::path(other->run_dir) / "last.safetensors").string());
    ASSERT_EQ(a.tensors.size(), b.tensors.size());
    for (auto& [k, t] : a.tensors) {
      ASSERT_TRUE(b.tensors.count(k)) << k;
      const auto x = t.to_vector<double>(), y = b.tensors.at(k).to_vector<double>();
      ASSERT_EQ(x.size(), y.size()) << k;
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_NEAR(x[i], y[i], 1e-6 * (1 + std::abs(x[i]))) << k << "[" << i << "]";
    }
  }
}

// A resume on another number of ranks keeps the images per step: the per-rank batch_size is
// rescaled where it splits. Where it does not, the run went on with another global batch, unsaid
// (16 on 2 ranks became 24 on 3): refused, naming the rank counts that divide it.
TEST(RescaleBatchForRanks, KeepsTheImagesPerStepOrRefuses) {
  train::Config c;
  c.batch_size = 8;
  EXPECT_EQ(train::rescale_batch_for_ranks(c, 2, 2), "");
  EXPECT_EQ(c.batch_size, 8);
  EXPECT_NE(train::rescale_batch_for_ranks(c, 2, 4).find("the same 16 images per step"),
            std::string::npos);
  EXPECT_EQ(c.batch_size, 4);
  c.batch_size = 8;
  try {
    train::rescale_batch_for_ranks(c, 2, 3);
    ADD_FAILURE() << "16 images per step were split over 3 ranks";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("16 images per step, which do not split over 3 ranks: "
                                         "resume on a number of ranks that divides 16 (1, 2, 4, 8, "
                                         "16)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(c.batch_size, 8);
}

TEST(ZeroOptimizerSingle, StateRoundTripsThroughAdamWKeys) {
  std::vector<Tensor> ps{Tensor::full({3, 2}, 0.5), Tensor::full({5}, -1.0)};
  for (Tensor& p : ps) p.requires_grad_();
  auto buckets = std::make_shared<std::vector<train::GradBucket>>(train::plan_buckets(ps, 16, 1));
  train::attach_bucket_grads(*buckets, ps);
  train::ParamGroup g{ps, {"w", "b"}, 0.1, 0.01};
  train::AdamW adam({g});
  train::ZeroOptimizer z(adam, ps, buckets);
  for (int s = 0; s < 3; ++s) {
    for (auto& b : *buckets) b.flat.fill_(0.25 * (s + 1));
    z.step();
  }
  auto sd = z.state_dict("optimizer.");
  ASSERT_EQ(sd.size(), 6u);  // exp_avg, exp_avg_sq, step for w and b
  std::map<std::string, Tensor> m(sd.begin(), sd.end());
  EXPECT_EQ(m.at("optimizer.w.step").item(), 3.0);
  EXPECT_EQ(m.at("optimizer.b.exp_avg").shape(), (Shape{5}));
  // an AdamW made the plain way agrees with the ZeRO state after the same three steps
  std::vector<Tensor> qs{Tensor::full({3, 2}, 0.5), Tensor::full({5}, -1.0)};
  for (Tensor& q : qs) q.requires_grad_();
  train::AdamW ref({train::ParamGroup{qs, {"w", "b"}, 0.1, 0.01}});
  for (int s = 0; s < 3; ++s) {
    for (Tensor& q : qs) {
      if (!q.grad().defined()) q.grad_slot()->grad = Tensor::zeros(q.shape());
      q.grad().fill_(0.25 * (s + 1));
    }
    ref.step();
  }
  for (auto& [k, t] : ref.state_dict("optimizer.")) EXPECT_EQ(t.to_vector<double>(), m.at(k).to_vector<double>()) << k;
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(ps[i].to_vector<double>(), qs[i].to_vector<double>());
  // and loads back
  train::AdamW fresh({train::ParamGroup{ps, {"w", "b"}, 0.1, 0.01}});
  train::ZeroOptimizer z2(fresh, ps, buckets);
  z2.load_state_dict(m, "optimizer.");
  auto again = z2.state_dict("optimizer.");
  for (auto& [k, t] : again) EXPECT_EQ(t.to_vector<double>(), m.at(k).to_vector<double>()) << k;
  EXPECT_EQ(z.state_bytes(), 2 * (6 + 5) * 4);  // exp_avg + exp_avg_sq of both (one bucket each) on one rank
}
