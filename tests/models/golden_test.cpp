// The golden test: every *.safetensors in $HAARGRAD_GOLDEN_DIR (default ../shared/golden), each
// recognised by its keys and metadata (never its name), checked in float64 and float32 on the CPU.
// A file of unknown kind fails the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "golden/golden.h"
#include "test_util.h"

using namespace hg;

namespace {

std::vector<std::string> golden_files() {
  std::vector<std::string> files;
  std::filesystem::path dir = test::golden_dir();
  if (!std::filesystem::is_directory(dir)) return files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

void check_folder(DType dtype) {
  std::vector<std::string> files = golden_files();
  ASSERT_FALSE(files.empty()) << "no golden files in " << test::golden_dir();
  for (const std::string& path : files) {
    safetensors::File f = safetensors::load(path);
    std::vector<test::GoldenCheck> checks;
    std::string kind;
    if (test::is_wtconv_cases(f)) {
      kind = "wtconv layer cases";
      checks = test::check_wtconv_cases(f, dtype, Device::cpu);
    } else if (test::is_model_file(f)) {
      kind = "model " + f.metadata.at("config");
      checks = test::check_model_file(f, dtype, Device::cpu);
    } else {
      ADD_FAILURE() << path << ": unknown kind of golden file (neither WTConv cases nor a model)";
      continue;
    }
    ASSERT_FALSE(checks.empty()) << path;
    double worst = 0;
    std::string worst_key;
    for (const auto& c : checks) {
      EXPECT_TRUE(c.ok()) << path << ": " << c.key << " relative error " << c.rel_error << " > " << c.tolerance;
      if (c.rel_error >= worst) {
        worst = c.rel_error;
        worst_key = c.key;
      }
    }
    std::printf("[golden %s] %s: %zu checks, worst relative error %.3g (%s) — %s\n", dtype_name(dtype),
                std::filesystem::path(path).filename().c_str(), checks.size(), worst, worst_key.c_str(),
                kind.c_str());
  }
}

}  // namespace

TEST(Golden, golden_files_float64) { check_folder(DType::f64); }
TEST(Golden, golden_files_float32) { check_folder(DType::f32); }
TEST(Golden, golden_files_bf16) { check_folder(DType::bf16); }
