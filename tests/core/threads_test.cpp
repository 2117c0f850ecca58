// CPU thread settings (core/threads.h): cores from affinity and cgroup quotas, the OpenMP thread
// count, OpenBLAS kept on one thread per call, and a GEMM split over the threads that equals the
// single-threaded one.
#include <gtest/gtest.h>
#include <sched.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/threads.h"
#include "kernels/matmul.h"

namespace hg {
namespace {

TEST(Threads, CgroupQuotaTexts) {
  EXPECT_EQ(cores_from_cpu_max("200000 100000\n"), 2);
  EXPECT_EQ(cores_from_cpu_max("150000 100000"), 2);  // 1.5 cores: round up
  EXPECT_EQ(cores_from_cpu_max("50000 100000"), 1);
  EXPECT_EQ(cores_from_cpu_max("max 100000"), std::nullopt);
  EXPECT_EQ(cores_from_cpu_max(""), std::nullopt);
  EXPECT_EQ(cores_from_cpu_max("garbage"), std::nullopt);
  EXPECT_EQ(cores_from_cfs("-1\n", "100000\n"), std::nullopt);
  EXPECT_EQ(cores_from_cfs("400000\n", "100000\n"), 4);
  EXPECT_EQ(cores_from_cfs("", ""), std::nullopt);
}

TEST(Threads, AvailableCoresFollowAffinity) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  const int all = available_cores();
  EXPECT_GE(all, 1);
  EXPECT_LE(all, CPU_COUNT(&saved));
  // Restricted to one CPU (as `taskset -c 0` would), this thread sees one core.
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &saved)) {
      CPU_SET(c, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const int restricted = available_cores();
  ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
  EXPECT_EQ(restricted, 1);
}

TEST(Threads, SetCpuThreadsSetsOpenMpAndKeepsBlasOnOneThread) {
  const int before = cpu_threads();
  // bench --threads 100000 crashed inside libgomp: bounded as the config's key is
  EXPECT_THROW(set_cpu_threads(kMaxCpuThreads + 1), hg::Error);
  EXPECT_THROW(set_cpu_threads(-1), hg::Error);
  EXPECT_EQ(set_cpu_threads(3), 3);
#ifdef _OPENMP
  EXPECT_EQ(cpu_threads(), 3);
#endif
  if (blas_threads() != -1) {  // OpenBLAS: one thread per call
    EXPECT_EQ(blas_threads(), 1);
  }
  if (!std::getenv("OMP_NUM_THREADS")) {
    EXPECT_EQ(set_cpu_threads(0), available_cores());
  }
  setenv("OMP_NUM_THREADS", "5", 1);  // the user's choice is the default
  EXPECT_EQ(set_cpu_threads(0), 5);
  unsetenv("OMP_NUM_THREADS");
  EXPECT_EQ(set_cpu_threads(0), available_cores());
  EXPECT_THROW(set_cpu_threads(-1), Error);
  EXPECT_NE(describe_cpu_threads().find("cores available"), std::string::npos);
  set_cpu_threads(before);
}

// The GEMM split over OpenMP threads (rows or columns of C, taken dynamically) gives the
// single-threaded result (to rounding: BLAS may treat edge blocks with other kernels) and the oracle's.
TEST(Threads, ThreadedGemmEqualsOneThread) {
  const int before = cpu_threads();
  struct Case {
    bool ta, tb;
    int64_t M, N, K;
  };
  for (const Case& c : {Case{false, true, 300, 70, 64}, Case{true, false, 40, 300, 128}, Case{false, false, 17, 513, 200},
                        Case{true, true, 129, 65, 130}}) {
    std::vector<float> A(c.M * c.K), B(c.K * c.N), C1(c.M * c.N, 0.5f), C4(c.M * c.N, 0.5f);
    for (size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>((i * 37 % 101) - 50) / 50.0f;
    for (size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>((i * 53 % 97) - 48) / 48.0f;
    set_cpu_threads(1);
    kernels::cpu::gemm<float>(c.ta, c.tb, c.M, c.N, c.K, 1.5f, A.data(), B.data(), 0.25f, C1.data());
    set_cpu_threads(4);
    kernels::cpu::gemm<float>(c.ta, c.tb, c.M, c.N, c.K, 1.5f, A.data(), B.data(), 0.25f, C4.data());
    for (size_t i = 0; i < C1.size(); ++i)
      ASSERT_NEAR(C4[i], C1[i], 1e-5f * (1 + std::abs(C1[i]))) << c.ta << c.tb << " " << c.M << "x" << c.N << " at " << i;
    std::vector<float> R(c.M * c.N, 0.5f);
    kernels::cpu::gemm_reference<float>(c.ta, c.tb, c.M, c.N, c.K, 1.5f, A.data(), B.data(), 0.25f, R.data());
    for (size_t i = 0; i < R.size(); ++i) ASSERT_NEAR(C4[i], R[i], 1e-4f * (1 + std::abs(R[i]))) << i;
  }
  set_cpu_threads(before);
}

// Fewer threads running (ThreadTuner, while other processes use cores) keep the split, hence every
// bit of the result; the split follows set_cpu_threads only, and the active count stays within it.
TEST(Threads, FewerActiveThreadsGiveTheSameBits) {
  const int before = cpu_threads();
  const int64_t M = 300, N = 70, K = 64;
  std::vector<float> A(M * K), B(K * N), C4(M * N), C1(M * N);
  for (size_t i = 0; i < A.size(); ++i) A[i] = std::sin(0.37f * static_cast<float>(i));
  for (size_t i = 0; i < B.size(); ++i) B[i] = std::cos(0.53f * static_cast<float>(i));
  set_cpu_threads(4);
  kernels::cpu::gemm<float>(false, true, M, N, K, 1.0f, A.data(), B.data(), 0.0f, C4.data());
  set_active_cpu_threads(1);
  EXPECT_EQ(cpu_split_threads(), 4);
#ifdef _OPENMP
  EXPECT_EQ(cpu_threads(), 1);
#endif
  kernels::cpu::gemm<float>(false, true, M, N, K, 1.0f, A.data(), B.data(), 0.0f, C1.data());
  EXPECT_EQ(C1, C4);
  EXPECT_THROW(set_active_cpu_threads(5), Error);
  EXPECT_THROW(set_active_cpu_threads(0), Error);
  EXPECT_EQ(set_cpu_threads(2), 2);
  EXPECT_EQ(cpu_split_threads(), 2);
  set_cpu_threads(before);
}

// The program's own thread count (threads: 0, no OMP_NUM_THREADS) is the only one a run may lower.
TEST(Threads, OnlyTheAutomaticCountIsTuned) {
  const char* env = std::getenv("OMP_NUM_THREADS");
  const std::string saved = env ? env : "";
  unsetenv("OMP_NUM_THREADS");
  EXPECT_TRUE(cpu_threads_are_automatic(0));
  EXPECT_FALSE(cpu_threads_are_automatic(2));
  setenv("OMP_NUM_THREADS", "2", 1);
  EXPECT_FALSE(cpu_threads_are_automatic(0));
  if (env)
    setenv("OMP_NUM_THREADS", saved.c_str(), 1);
  else
    unsetenv("OMP_NUM_THREADS");
}

// --threads 1000 on 2 cores ran 180x slower with nothing said, and OMP_NUM_THREADS=abc was ignored
// with libgomp's warning alone: both are said.
TEST(Threads, MoreThreadsThanCoresOrABadEnvironmentIsSaid) {
  const char* env = std::getenv("OMP_NUM_THREADS");
  const std::string saved = env ? env : "";
  unsetenv("OMP_NUM_THREADS");
  const int cores = available_cores();
  EXPECT_EQ(cpu_threads_warning(0), "");
  EXPECT_EQ(cpu_threads_warning(cores), "");
  EXPECT_NE(cpu_threads_warning(cores + 1).find(
                str("threads ", cores + 1, " is more than the ", cores, " cores")),
            std::string::npos)
      << cpu_threads_warning(cores + 1);
  setenv("OMP_NUM_THREADS", "abc", 1);
  EXPECT_NE(cpu_threads_warning(0).find("OMP_NUM_THREADS='abc' is not a whole number"),
            std::string::npos)
      << cpu_threads_warning(0);
  EXPECT_EQ(cpu_threads_warning(1), "");  // the config's count wins: the variable is not read
  setenv("OMP_NUM_THREADS", str(cores + 3).c_str(), 1);
  EXPECT_NE(cpu_threads_warning(0).find(str("OMP_NUM_THREADS ", cores + 3, " is more than")),
            std::string::npos)
      << cpu_threads_warning(0);
  if (env)
    setenv("OMP_NUM_THREADS", saved.c_str(), 1);
  else
    unsetenv("OMP_NUM_THREADS");
}

}  // namespace
}  // namespace hg
