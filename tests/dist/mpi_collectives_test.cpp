// The collectives on 2 ranks over MPI (CPU tensors): this binary runs itself under
// `mpirun -np 2 ... --gtest_filter=MpiRanks.*`; the MpiRanks tests skip when not under mpirun.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <map>
#include <thread>

#include "core/autograd.h"
#include "dist/collectives.h"
#include "dist/process_group.h"
#include "dist_util.h"
#include "train/config.h"
#include "train/grad_buckets.h"
#include "train/trainer.h"
#include "train/zero_optimizer.h"

using namespace hg;

namespace {

// MPI starts before the tests and ends after them (a no-op without mpirun).
class MpiEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { dist::init(); }
  void TearDown() override { dist::finalize(); }
};
const auto* const kMpiEnvironment = ::testing::AddGlobalTestEnvironment(new MpiEnvironment);

#define REQUIRE_RANKS()                                                                    \
  if (dist::size() < 2) GTEST_SKIP() << "runs on 2+ ranks only (Mpi.CollectivesOnTwoRanks)"

}  // namespace

TEST(MpiRanks, AllReduceSumAndMean) {
  REQUIRE_RANKS();
  const int r = dist::rank(), n = dist::size();
  Tensor a = Tensor::from_vector<float>({3}, {1.0f + r, 10.0f * r, -2.0f});
  dist::all_reduce(a, dist::Reduce::sum, "test sum").wait();
  const double rs = n * (n - 1) / 2.0;  // sum of ranks
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{static_cast<float>(n + rs), static_cast<float>(10 * rs),
                                                       static_cast<float>(-2 * n)}));
  Tensor b = Tensor::from_vector<double>({2}, {static_cast<double>(r), 4.0});
  dist::all_reduce(b, dist::Reduce::avg, "test mean").wait();
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{rs / n, 4.0}));
}

TEST(MpiRanks, ReduceScatterLeavesEachRankItsChunk) {
  REQUIRE_RANKS();
  const int r = dist::rank(), n = dist::size();
  std::vector<float> v(static_cast<size_t>(3 * n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * (r + 1);
  Tensor t = Tensor::from_vector<float>({3 * n}, v);
  dist::reduce_scatter(t, dist::Reduce::avg, "test reduce-scatter").wait();
  const auto out = t.to_vector<float>();
  const float mean_factor = (n + 1) / 2.0f;  // mean of (r + 1) over ranks
  for (int j = 0; j < 3; ++j) EXPECT_FLOAT_EQ(out[static_cast<size_t>(3 * r + j)], (3 * r + j) * mean_factor) << j;
}

TEST(MpiRanks, AllGatherAndBroadcast) {
  REQUIRE_RANKS();
  const int r = dist::rank(), n = dist::size();
  Tensor t = Tensor::full({2 * n}, -1.0);
  t.slice(0, 2 * r, 2 * r + 2).fill_(r * 100.0);
  dist::all_gather(t, "test all-gather").wait();
  const auto g = t.to_vector<float>();
  for (int k = 0; k < n; ++k) EXPECT_EQ(g[static_cast<size_t>(2 * k + 1)], k * 100.0f);
  Tensor c = Tensor::full({4}, static_cast<double>(r + 7), DType::f64);
  dist::broadcast(c, n - 1, "test broadcast").wait();
  EXPECT_EQ(c.to_vector<double>(), std::vector<double>(4, n + 6.0));
}

TEST(MpiRanks, HostCollectives) {
  REQUIRE_RANKS();
  const int r = dist::rank(), n = dist::size();
  EXPECT_EQ(dist::sum({1.0, static_cast<double>(r)}, "test")[0], n);
  EXPECT_TRUE(dist::any(r == n - 1, "test"));
  EXPECT_FALSE(dist::any(false, "test"));
  EXPECT_EQ(dist::broadcast(r == 0 ? std::string("from rank 0") : std::string("x"), 0, "test"), "from rank 0");
  const auto all = dist::all_gather({static_cast<uint64_t>(r), 5}, "test");
  ASSERT_EQ(all.size(), static_cast<size_t>(2 * n));
  EXPECT_EQ(all[2], 1u);
  dist::barrier("test barrier");
}

// A rank that does not come: the others' collective ends with an error naming the rank and the call.
TEST(MpiRanks, ACollectiveTimesOutWithAMessage) {
  REQUIRE_RANKS();
  const double saved = dist::timeout();
  dist::set_timeout(0.5);
  if (dist::rank() == 0) {
    try {
      dist::sum({1.0}, "a sum rank 1 joins late");
      ADD_FAILURE() << "no timeout";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("rank 0 of"), std::string::npos) << m;
      EXPECT_NE(m.find("'a sum rank 1 joins late' did not complete within 0.5 s"), std::string::npos) << m;
    }
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));  // far past rank 0's 0.5 s
  }
  // the abandoned request on rank 0 completes once the late ranks join; the run would have
  // aborted instead (abort_all), a test just needs the ranks in step again
  dist::set_timeout(saved);
  if (dist::rank() != 0) dist::sum({1.0}, "a sum rank 1 joins late");
  dist::barrier("after the timeout test");
}

// ZeRO-1 over the ranks: each holds 1/R of the AdamW state, and a step on rank-dependent gradients
// reduce-scattered to their mean gives every rank the parameters of AdamW on the mean gradients.
TEST(MpiRanks, ZeroOneShardsTheStateAndMatchesAdamW) {
  REQUIRE_RANKS();
  const int r = dist::rank(), n = dist::size();
  auto make = [] {
    std::vector<Tensor> ps{Tensor::full({7, 3}, 0.5), Tensor::full({11}, -1.0), Tensor::full({2}, 2.0)};
    for (Tensor& p : ps) p.requires_grad_();
    return ps;
  };
  std::vector<Tensor> ps = make(), ref = make();
  auto buckets = std::make_shared<std::vector<train::GradBucket>>(train::plan_buckets(ps, 64, n));
  train::attach_bucket_grads(*buckets, ps);
  train::AdamW inner({train::ParamGroup{ps, {"a", "b", "c"}, 0.1, 0.05}});
  train::ZeroOptimizer zero(inner, ps, buckets);
  int64_t padded = 0;
  for (const auto& b : *buckets) padded += b.padded;
  EXPECT_EQ(zero.state_bytes(), 2 * padded / n * 4) << "exp_avg + exp_avg_sq of 1/" << n << " of the elements";
  train::AdamW adam({train::ParamGroup{ref, {"a", "b", "c"}, 0.1, 0.05}});
  for (int step = 1; step <= 2; ++step) {
    // rank r's gradient of element i: (i + 1) * (r + 1) * step / 10; the mean over ranks is exact
    for (auto& b : *buckets) {
      std::vector<float> g(static_cast<size_t>(b.padded), 0.0f);
      for (int64_t i = 0; i < b.numel; ++i) g[static_cast<size_t>(i)] = static_cast<float>((i + 1) * (r + 1) * step) / 10;
      b.flat.copy_(Tensor::from_vector<float>({b.padded}, g));
      dist::reduce_scatter(b.flat, dist::Reduce::avg, "test ZeRO gradients").wait();
    }
    zero.step();
    // the same mean gradients, unsharded, for the reference AdamW
    for (const auto& b : *buckets)
      for (const auto& e : b.entries) {
        std::vector<float> g(static_cast<size_t>(e.numel));
        for (int64_t i = 0; i < e.numel; ++i)
          g[static_cast<size_t>(i)] = static_cast<float>((e.offset + i + 1) * step) * (n + 1) / 2.0f / 10;
        ref[e.param].grad_slot()->grad = Tensor::from_vector<float>(ref[e.param].shape(), g);
      }
    adam.step();
  }
  for (size_t k = 0; k < ps.size(); ++k) {
    const auto a = ps[k].to_vector<float>(), b = ref[k].to_vector<float>();
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << "parameter " << k << "[" << i << "]";
  }
  // the gathered state equals AdamW's on rank 0
  const auto sd = zero.state_dict("");
  if (r == 0) {
    std::map<std::string, Tensor> mine(sd.begin(), sd.end());
    for (auto& [k, t] : adam.state_dict("")) {
      const auto x = t.to_vector<double>(), y = mine.at(k).to_vector<double>();
      for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-6 * (1 + std::abs(x[i]))) << k;
    }
  } else {
    EXPECT_TRUE(sd.empty());
  }
}

// A stop signal that reaches one rank during the evaluation of a run with a model EMA (mpirun
// forwards it to every rank, but not at the same instant, and a signal sent to one rank's pid
// reaches that one alone): every rank skips the EMA's evaluation together and the run stops with
// its recovery checkpoint. Rank 1 alone used to skip it, so rank 0's reduction of the EMA's
// metrics met rank 1's stop-flag collective: MPI_ERR_TRUNCATE, and no recovery checkpoint.
TEST(MpiRanks, AStopOnOneRankDuringTheEvaluationStopsEveryRankCleanly) {
  REQUIRE_RANKS();
  namespace fs = std::filesystem;
  const fs::path out =
      fs::temp_directory_path() /
      ("hg_mpi_eval_stop_" + dist::broadcast(std::to_string(::getpid()), 0, "test folder"));
  train::Config c = train::load_config(HAARGRAD_SOURCE_DIR "/configs/smoke.yaml");
  // 12 validation images: 6 per rank, 3 batches of 2 each
  train::apply_overrides(
      c, {"--device", "cpu", "--workers", "0", "--threads", "1", "--model_ema", "true", "--epochs",
          "1", "--validation_batch_size", "2", "--dist_timeout", "30", "--output", out.string()});
  train::TrainOptions opts;
  opts.plain_output = true;
  opts.after_eval_batch = [](int64_t, int64_t) {
    return dist::rank() == 1;
  };  // after its first batch
  const train::TrainResult r = train::train(c, opts);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.stop_signal, dist::rank() == 1 ? SIGUSR1 : SIGTERM)
      << "rank 0 stops as told to terminate";
  dist::barrier("after the evaluation stop test");
  if (dist::rank() == 0) {
    EXPECT_TRUE(fs::exists(out / "smoke" / "recovery.safetensors"));
    EXPECT_FALSE(fs::exists(out / "smoke" / "summary.csv"))
        << "a stopped evaluation is not recorded";
    fs::remove_all(out);
  }
}

TEST(Mpi, CollectivesOnTwoRanks) {
  if (test::mpiexec().empty()) GTEST_SKIP() << "MPI not found at configure time (scripts/install-deps.sh installs it)";
  const auto r = test::run_command(test::mpirun(2) + HAARGRAD_BINARY_DIR + "/tests/test_dist --gtest_color=no --gtest_filter='MpiRanks.*'",
                                   120);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[  PASSED  ] 7 tests"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("SKIPPED"), std::string::npos) << r.output;
}
