// CPU threads: one pool for every CPU kernel. Our kernels parallelise with OpenMP; OpenBLAS is kept
// on the calling thread (kernels/cpu/matmul.cpp splits a GEMM over the OpenMP threads itself), so
// the two libraries never run two sets of busy-waiting threads on the same cores.
//
// The default thread count is the number of cores this process may use: the CPUs of its affinity
// mask (taskset, cpuset cgroups, container runtimes), capped by a cgroup CPU quota (docker
// --cpus=2 on a 64-core host means 2, not 64), which OpenMP's own default ignores.
//
// Another process on the cores. Idle OpenMP threads spin 10,000 times, then sleep (app/main.cpp
// sets GOMP_SPINCOUNT unless the user chose a policy), and a training run with the default count
// runs one thread fewer while its steps are measured faster so (core/thread_tuner.h). Measured on
// the 2-core development machine, default job (`haargrad train configs/fashion_mnist.yaml`, 300
// steps), img/s, median of 3, candidates interleaved; "busy": one `yes > /dev/null` beside it. Two
// sets, 40 minutes apart, as other helpers' builds came and went (the load average before each run,
// the run's own threads included, was 0.3 to 2.7 in the second set, 1.6 to 4.9 in the first):
//
//                                               second set       first set
//                                               alone   busy     alone   busy
//   2 threads, GOMP_SPINCOUNT=10000 (before)    1,378    678     1,471    648
//   2 threads, libgomp's default spin (300,000)     -      -     1,511    574
//   2 threads, GOMP_SPINCOUNT=1000                  -      -     1,415    892
//   2 threads, OMP_WAIT_POLICY=passive          1,393    918     1,467    959
//   1 thread                                      901    952     1,027    985
//   ThreadTuner (now the default)               1,379    907     1,308    964 (*)
//   ThreadTuner + OMP_WAIT_POLICY=passive       1,318    937         -      -
//   (*) with a later first try than now
//
// Every parallel loop ends at a barrier, and a thread that shares its core with another process is
// the slowest by far: two spinning threads lose half their speed. Sleeping waiters (passive)
// probably let the OS move that thread to the core its partner frees, which avoids the collapse
// too; but the previous session measured them 11% slower than the short spin alone on a quieter
// machine (1,680 vs 1,884 img/s; here the two were within the +-10% the machine's speed varied from
// run to run), presumably a futex wake for each of a step's many small loops. Measuring keeps the
// short spin while alone and one thread while busy. In 300-step runs the tuner's first windows (at
// two threads) and its tries cost a few percent; over the default job's 4,221 steps its tries cost
// under 1.2% alone (simulated with these timings: tests/core/thread_tuner_test.cpp).
#pragma once

#include <optional>
#include <string>

namespace hg {

/// Cores this process may run on: the CPUs of the calling thread's affinity mask, capped by the
/// cgroup CPU quota (v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us of this process's cgroup
/// and its ancestors), the quota rounded up. At least 1.
int available_cores();

/// Cores a cgroup quota allows: ceil(quota / period) from the text of a v2 `cpu.max` file
/// ("200000 100000" -> 2, "150000 100000" -> 2, "max 100000" -> none). nullopt for no limit or text
/// that is not a quota.
std::optional<int> cores_from_cpu_max(const std::string& text);
/// The same from the v1 files' texts (quota "-1" = no limit).
std::optional<int> cores_from_cfs(const std::string& quota_text, const std::string& period_text);

/// Sets the threads of the CPU kernels: `n` >= 1, or 0 for the default: OMP_NUM_THREADS when set
/// to a positive integer (the user's choice), else available_cores(). The kernels split their work
/// for this count (which fixes their results: a GEMM's blocks, hence its rounding, follow it), and
/// run on it until set_active_cpu_threads lowers it. Also confines OpenBLAS to one thread per call
/// and checks that it took (when the BLAS is OpenBLAS). Returns the number of threads now used.
/// Throws hg::Error for n outside [0, kMaxCpuThreads] or when OpenBLAS keeps more than one thread.
/// Call it before the first kernel runs (the program does, at start-up, and again with the config's
/// `threads`).
int set_cpu_threads(int n);

/// The most CPU threads `threads` (and --threads, OMP_NUM_THREADS) may ask for: libgomp failed to
/// create ~50,000 and crashed at 100,000 (a segfault inside the first parallel region).
inline constexpr int kMaxCpuThreads = 4096;

/// What set_cpu_threads(`configured`) would do that a user may not expect, as a warning's text, or
/// "" when nothing: more threads than available_cores() (`threads` or OMP_NUM_THREADS: the
/// threads take turns on the cores; a run on 2 cores took 180x as long at 1000), or, with
/// configured 0, an OMP_NUM_THREADS that is not a whole number in [1, 4096] (ignored). Reads the
/// environment and the cores now.
std::string cpu_threads_warning(int configured);

/// Runs the CPU kernels on `n` threads (1 <= n <= cpu_split_threads()) without changing how they
/// split their work, so without changing any result: what ThreadTuner (core/thread_tuner.h) does
/// while other processes keep cores busy. Throws hg::Error for n out of that range.
void set_active_cpu_threads(int n);

/// The count the CPU kernels split their work for: the last set_cpu_threads (cpu_threads() before
/// any call).
int cpu_split_threads();

/// Confines OpenBLAS to one thread per call and checks that it took; a no-op for other BLAS
/// libraries. Throws hg::Error when OpenBLAS keeps more threads. set_cpu_threads and the first GEMM
/// call it.
void confine_blas_threads();

/// Whether the thread count of a run with config `threads` = `configured` is the program's own
/// choice: configured is 0 and OMP_NUM_THREADS is not set. Only then may a training run lower it
/// while other processes keep cores busy (core/thread_tuner.h); a count the user chose stays.
bool cpu_threads_are_automatic(int configured);

/// Threads the CPU kernels run on now (OpenMP's max threads; 1 in a build without OpenMP).
int cpu_threads();

/// Threads one OpenBLAS call may use (1 once set_cpu_threads ran), or -1 when the BLAS is not
/// OpenBLAS or there is no BLAS.
int blas_threads();

/// One line for logs and --version, e.g. "2 threads (2 cores available), OpenBLAS 0.3.21 ... on 1
/// thread per call, OpenMP 201511".
std::string describe_cpu_threads();

}  // namespace hg
