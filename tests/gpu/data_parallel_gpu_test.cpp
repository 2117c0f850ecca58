// The data-parallel path on one GPU (dist_force: buckets, the autograd hook, NCCL collectives of
// one rank on their own stream, ZeRO-1 over one rank): it must train exactly like the plain
// single-GPU trainer. (Several GPUs: `mpirun -np 2 haargrad train ...`, README "Data-parallel".)
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "dist/collectives.h"
#include "gpu_util.h"
#include "train/config.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace hg;

namespace {

// summary.csv's deterministic columns (epoch .. lr), all rows, as numbers
std::vector<double> summary(const std::string& run_dir) {
  std::ifstream f(fs::path(run_dir) / "summary.csv");
  std::vector<double> out;
  std::string line;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    std::stringstream cells(line);
    std::string cell;
    for (int i = 0; i < 6 && std::getline(cells, cell, ','); ++i) out.push_back(std::stod(cell));
  }
  return out;
}

// Equal up to summation order (a bucketed reduction over one rank changes nothing; cuDNN may pick
// another algorithm run to run): 1e-6 relative.
void expect_close(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  ASSERT_FALSE(a.empty()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6 * std::max(1.0, std::abs(a[i]))) << what << " " << i;
}

}  // namespace

TEST(DataParallelGpu, NcclPathOnOneGpuTrainsLikeThePlainTrainer) {
  HG_REQUIRE_GPU();
  if (!dist::has_nccl()) GTEST_SKIP() << "built without NCCL";
  const fs::path root = fs::temp_directory_path() / ("hg_dp_gpu_" + std::to_string(::getpid()));
  fs::remove_all(root);
  train::Config c = train::load_config(std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml");
  c.device = "cuda";
  c.workers = 0;
  train::TrainOptions quiet;
  quiet.plain_output = true;
  auto run = [&](const std::string& name, bool force, int64_t zero) {
    train::Config x = c;
    x.output = (root / name).string();
    x.dist_force = force;
    x.zero_stage = zero;
    x.dist_bucket_mb = 0.002;  // many buckets in flight at once
    x.dist_check_every = 1;
    return summary(train::train(x, quiet).run_dir);
  };
  const auto plain = run("plain", false, 0);
  expect_close(run("nccl", true, 0), plain, "NCCL path, one rank");
  expect_close(run("zero1", true, 1), plain, "ZeRO-1, one rank");
  fs::remove_all(root);
}
