// Two training runs compared through their summary.csv (GPU tests of the trainer).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace hg::test {

// summary.csv's deterministic columns (epoch .. lr), all rows, as numbers
inline std::vector<double> summary(const std::string& run_dir) {
  std::ifstream f(std::filesystem::path(run_dir) / "summary.csv");
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
inline void expect_close(const std::vector<double>& a, const std::vector<double>& b,
                         const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  ASSERT_FALSE(a.empty()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 1e-6 * std::max(1.0, std::abs(a[i]))) << what << " " << i;
}

}  // namespace hg::test
