// CPU thread settings (see threads.h).
#include "core/threads.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/utf8.h"

#ifdef _OPENMP
#include <omp.h>
#endif

// OpenBLAS's thread controls. Weak: another BLAS (or none) lacks them, and then they are null.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));
extern "C" int openblas_get_num_threads(void) __attribute__((weak));
extern "C" char* openblas_get_config(void) __attribute__((weak));

namespace hg {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f) return "";
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

int affinity_cores() {
  const int max_cpus = 4096;
  cpu_set_t* set = CPU_ALLOC(max_cpus);
  if (!set) return 1;
  const size_t bytes = CPU_ALLOC_SIZE(max_cpus);
  CPU_ZERO_S(bytes, set);
  int n = 0;
  if (sched_getaffinity(0, bytes, set) == 0) n = CPU_COUNT_S(bytes, set);
  CPU_FREE(set);
  return std::max(n, 1);
}

// "/a/b/c" -> {"/a/b/c", "/a/b", "/a", ""}: a quota set on an ancestor cgroup applies too.
std::vector<std::string> self_and_ancestors(std::string path) {
  std::vector<std::string> out;
  while (!path.empty() && path.back() == '/') path.pop_back();
  while (true) {
    out.push_back(path);
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos || path.empty()) break;
    path = path.substr(0, slash);
  }
  if (out.back() != "") out.push_back("");
  return out;
}

// The smallest quota of this process's cgroups (v2 and v1), or nullopt when none is set.
std::optional<int> cgroup_cores() {
  std::optional<int> best;
  auto take = [&best](std::optional<int> c) {
    if (c && (!best || *c < *best)) best = c;
  };
  std::istringstream lines(read_text("/proc/self/cgroup"));
  std::string line;
  while (std::getline(lines, line)) {
    // "hierarchy-id:controllers:path"; v2 is "0::path"
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers.empty()) {
      for (const std::string& p : self_and_ancestors(path)) {
        take(cores_from_cpu_max(read_text("/sys/fs/cgroup" + p + "/cpu.max")));
        take(cores_from_cpu_max(read_text("/sys/fs/cgroup/unified" + p + "/cpu.max")));
      }
      continue;
    }
    bool has_cpu = false;
    std::istringstream names(controllers);
    for (std::string c; std::getline(names, c, ',');) has_cpu |= c == "cpu";
    if (!has_cpu) continue;
    for (const char* mount : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpuacct,cpu"})
      for (const std::string& p : self_and_ancestors(path))
        take(cores_from_cfs(read_text(str(mount, p, "/cpu.cfs_quota_us")),
                            read_text(str(mount, p, "/cpu.cfs_period_us"))));
  }
  return best;
}

std::optional<double> parse_number(const std::string& text) {
  std::istringstream s(text);
  double v;
  if (!(s >> v) || !std::isfinite(v)) return std::nullopt;
  std::string rest;
  if (s >> rest) return std::nullopt;
  return v;
}

std::optional<int> cores_from_quota(double quota, double period) {
  if (quota <= 0 || period <= 0) return std::nullopt;
  return std::max(1, static_cast<int>(std::ceil(quota / period - 1e-9)));
}

// OMP_NUM_THREADS when the user set it to one positive number (their choice, as for any OpenMP program).
std::optional<int> env_threads() {
  const char* v = std::getenv("OMP_NUM_THREADS");
  if (!v) return std::nullopt;
  const auto n = parse_number(v);
  if (!n || *n < 1 || *n != std::floor(*n) || *n > kMaxCpuThreads) return std::nullopt;
  return static_cast<int>(*n);
}

}  // namespace

std::optional<int> cores_from_cpu_max(const std::string& text) {
  std::istringstream s(text);
  std::string quota, period;
  if (!(s >> quota >> period) || quota == "max") return std::nullopt;
  const auto q = parse_number(quota), p = parse_number(period);
  if (!q || !p) return std::nullopt;
  return cores_from_quota(*q, *p);
}

std::optional<int> cores_from_cfs(const std::string& quota_text, const std::string& period_text) {
  const auto q = parse_number(quota_text), p = parse_number(period_text);
  if (!q || !p) return std::nullopt;
  return cores_from_quota(*q, *p);  // quota -1 = no limit
}

int available_cores() {
  int n = affinity_cores();
  if (const auto quota = cgroup_cores()) n = std::min(n, *quota);
  return std::max(n, 1);
}

void confine_blas_threads() {
  // One pool: OpenBLAS computes on the calling thread, our GEMM splits the work over OpenMP's.
  if (openblas_set_num_threads) openblas_set_num_threads(1);
  if (openblas_get_num_threads)
    HG_CHECK(openblas_get_num_threads() == 1, "OpenBLAS kept ", openblas_get_num_threads(),
             " threads per call after openblas_set_num_threads(1); its pool would fight the CPU kernels' "
             "OpenMP threads (set OPENBLAS_NUM_THREADS=1)");
}

namespace {
std::atomic<int> g_split_threads{0};  // 0: set_cpu_threads not called yet
}  // namespace

int set_cpu_threads(int n) {
  HG_CHECK(n >= 0 && n <= kMaxCpuThreads, "threads must be in [0, ", kMaxCpuThreads,
           "] (0 = the cores available), got ", n);
  if (n == 0) n = env_threads().value_or(available_cores());
  confine_blas_threads();
#ifdef _OPENMP
  omp_set_num_threads(n);
#else
  n = 1;
#endif
  g_split_threads = n;
  return n;
}

void set_active_cpu_threads(int n) {
  HG_CHECK(n >= 1 && n <= cpu_split_threads(), "active CPU threads must be in [1, ",
           cpu_split_threads(), "] (the threads the kernels split their work for), got ", n);
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
}

int cpu_split_threads() {
  const int n = g_split_threads;
  return n > 0 ? n : cpu_threads();
}

std::string cpu_threads_warning(int configured) {
  const int cores = available_cores();
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (configured == 0 && env != nullptr && !env_threads())
    return str("OMP_NUM_THREADS='", printable(env), "' is not a whole number in [1, ",
               kMaxCpuThreads, "]: ignored; the CPU kernels use the ", cores,
               " cores this process may use");
  const int n = configured > 0 ? configured : env_threads().value_or(0);
  if (n <= cores) return "";
  return str(configured > 0 ? "threads " : "OMP_NUM_THREADS ", n, " is more than the ", cores,
             " cores this process may use: the CPU kernels' threads take turns on them, which is "
             "far slower (threads 0 = the cores available)");
}

bool cpu_threads_are_automatic(int configured) { return configured == 0 && !env_threads(); }

int cpu_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

int blas_threads() { return openblas_get_num_threads ? openblas_get_num_threads() : -1; }

std::string describe_cpu_threads() {
  std::string s = str(cpu_threads(), " threads (", available_cores(), " cores available)");
#ifdef _OPENMP
  s += str(", OpenMP ", _OPENMP);
#else
  s += ", no OpenMP";
#endif
  if (openblas_get_config) {
    std::string cfg = openblas_get_config();
    while (!cfg.empty() && cfg.back() == ' ') cfg.pop_back();
    s += str(", ", cfg, " on ", blas_threads(), " thread per call");
  } else {
#ifdef HAARGRAD_WITH_BLAS
    s += ", BLAS (not OpenBLAS)";
#else
    s += ", no BLAS (plain-loop GEMM)";
#endif
  }
  return s;
}

}  // namespace hg
