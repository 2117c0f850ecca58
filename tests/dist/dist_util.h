// Helpers of the data-parallel tests: running a program (under mpirun), reading summary.csv.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace hg::test {

/// The launcher CMake found ("" without MPI).
inline std::string mpiexec() { return HAARGRAD_MPIEXEC; }

/// `mpiexec --allow-run-as-root --oversubscribe -np N` (CI runs as root on a 2-core machine); one
/// OpenMP thread per rank so that N ranks do not fight over the cores.
inline std::string mpirun(int n) {
  return mpiexec() + " --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -np " +
         std::to_string(n) + " ";
}

struct ProgramRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
  double seconds = 0;
};

/// Runs a shell command, at most `limit_s` seconds (coreutils timeout: a hang fails, never blocks CI).
inline ProgramRun run_command(const std::string& cmd, int limit_s = 240) {
  ProgramRun r;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string full = "timeout -k 5 " + std::to_string(limit_s) + " " + cmd + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) r.output.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

/// The deterministic columns of summary.csv (epoch, train_loss, eval_loss, eval_top1, eval_top5,
/// lr) as numbers, row by row; throughput and memory are measurements and left out.
inline std::vector<std::vector<double>> summary_numbers(const std::filesystem::path& csv) {
  std::ifstream f(csv);
  std::vector<std::vector<double>> rows;
  std::string line;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    std::stringstream cells(line);
    std::vector<double> row;
    std::string cell;
    for (int i = 0; i < 6 && std::getline(cells, cell, ','); ++i) row.push_back(std::stod(cell));
    rows.push_back(row);
  }
  return rows;
}

/// Every deterministic column of a equals b's to `rel` relative (absolute near zero).
inline void expect_summaries_match(const std::filesystem::path& a, const std::filesystem::path& b, double rel,
                                   const std::string& what) {
  const auto x = summary_numbers(a), y = summary_numbers(b);
  ASSERT_EQ(x.size(), y.size()) << what << ": " << a << " vs " << b;
  ASSERT_FALSE(x.empty()) << what;
  const char* names[] = {"epoch", "train_loss", "eval_loss", "eval_top1", "eval_top5", "lr"};
  for (size_t r = 0; r < x.size(); ++r)
    for (size_t c = 0; c < x[r].size(); ++c)
      EXPECT_NEAR(x[r][c], y[r][c], rel * std::max(1e-3, std::abs(x[r][c])))
          << what << ": row " << r + 1 << " column " << names[c];
}

}  // namespace hg::test
