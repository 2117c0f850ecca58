// The golden test on the GPU: every file of $HAARGRAD_GOLDEN_DIR recognised by kind and checked in
// float32 on CUDA (1e-5 for a layer, 1e-4 for a whole model, as ../shared/golden/README.md states)
// and in bf16 mixed precision (tolerances in tests/golden/*.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "golden/golden.h"
#include "gpu_util.h"
#include "test_util.h"

using namespace hg;

namespace {

void check_folder_cuda(DType dtype) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(test::golden_dir()))  // throws if absent
    if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << "no golden files in " << test::golden_dir() << " (set HAARGRAD_GOLDEN_DIR)";
  for (const std::string& path : files) {
    safetensors::File f = safetensors::load(path);
    std::vector<test::GoldenCheck> checks;
    if (test::is_wtconv_cases(f))
      checks = test::check_wtconv_cases(f, dtype, Device::cuda);
    else if (test::is_model_file(f))
      checks = test::check_model_file(f, dtype, Device::cuda);
    else
      ADD_FAILURE() << path << ": unknown kind of golden file";
    double worst = 0;
    std::string worst_key;
    for (const auto& c : checks) {
      EXPECT_TRUE(c.ok()) << path << ": " << c.key << " relative error " << c.rel_error << " > " << c.tolerance;
      if (c.rel_error >= worst) {
        worst = c.rel_error;
        worst_key = c.key;
      }
    }
    std::printf("[golden %s cuda] %s: %zu checks, worst relative error %.3g (%s)\n", dtype_name(dtype),
                std::filesystem::path(path).filename().c_str(), checks.size(), worst, worst_key.c_str());
  }
}

}  // namespace

TEST(GoldenGpu, golden_files_float32_cuda) {
  HG_REQUIRE_GPU();
  check_folder_cuda(DType::f32);
}

TEST(GoldenGpu, golden_files_bf16_cuda) {
  HG_REQUIRE_GPU();
  check_folder_cuda(DType::bf16);
}
