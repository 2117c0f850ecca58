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
#include "run_summary.h"
#include "train/config.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace hg;

TEST(DataParallelGpu, NcclPathOnOneGpuTrainsLikeThePlainTrainer) {
  HG_REQUIRE_GPU();
  if (!dist::has_nccl()) GTEST_SKIP() << "built without NCCL";
  const fs::path root = fs::temp_directory_path() / ("hg_dp_gpu_" + std::to_string(::getpid()));
  fs::remove_all(root);
  train::Config c = train::load_config(std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml");
  c.device = "cuda";
  c.workers = 0;
  // timm's layer-scale init (1e-6) leaves the blocks' branches ~1e-6 of the loss, under this
  // test's tolerance: a bucket or shard whose gradients were lost would pass. At 1 they matter.
  c.ls_init_value = 1.0;
  train::TrainOptions quiet;
  quiet.plain_output = true;
  auto run = [&](const std::string& name, bool force, int64_t zero) {
    train::Config x = c;
    x.output = (root / name).string();
    x.dist_force = force;
    x.zero_stage = zero;
    x.dist_bucket_mb = 0.002;  // many buckets in flight at once
    x.dist_check_every = 1;
    return test::summary(train::train(x, quiet).run_dir);
  };
  const auto plain = run("plain", false, 0);
  test::expect_close(run("nccl", true, 0), plain, "NCCL path, one rank");
  test::expect_close(run("zero1", true, 1), plain, "ZeRO-1, one rank");
  fs::remove_all(root);
}
