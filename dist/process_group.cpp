// The process group: MPI start-up and shutdown, the timed wait, host collectives, abort_all.
#include "dist/process_group.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "dist/collectives.h"
#include "dist/mpi_util.h"

namespace hg::dist {
namespace {

Info g_info;
bool g_initialised = false;
double g_timeout = 300.0;

std::string host_name() {
  char b[256] = {0};
  return gethostname(b, sizeof b - 1) == 0 ? std::string(b) : std::string("?");
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

#ifdef HAARGRAD_WITH_CUDA
// The local rank as the launcher announces it before MPI_Init (Open MPI, MPICH/Hydra, Slurm), or -1.
int launcher_local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* v = env(name)) return std::atoi(v);
  return -1;
}

// One process per GPU: the local rank's GPU becomes the only one this process sees, so that every
// thread (loader workers allocating pinned memory included) uses it and no process creates a
// context on another GPU. Must run before the CUDA runtime is first used. CUDA_VISIBLE_DEVICES set
// by the user is respected: the local rank picks from its list.
void pick_gpu(int local_rank) {
  std::vector<std::string> ids;
  if (const char* v = env("CUDA_VISIBLE_DEVICES")) {
    std::stringstream ss(v);
    for (std::string id; std::getline(ss, id, ',');)
      if (!id.empty()) ids.push_back(id);
  } else {
    std::error_code ec;
    const std::filesystem::path gpus = "/proc/driver/nvidia/gpus";
    int n = 0;
    if (std::filesystem::is_directory(gpus, ec))
      for (auto it = std::filesystem::directory_iterator(gpus, ec); !ec && it != std::filesystem::directory_iterator(); ++it)
        ++n;
    for (int i = 0; i < n; ++i) ids.push_back(std::to_string(i));
  }
  if (ids.empty()) return;  // no GPU here: a CPU run
  setenv("CUDA_VISIBLE_DEVICES", ids[static_cast<size_t>(local_rank) % ids.size()].c_str(), 1);
}
#endif

}  // namespace

bool launched_by_mpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (env(name)) return true;
  return false;
}

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    const char* v = env(name);
    if (!v) continue;
    char* end = nullptr;
    errno = 0;
    const long r = std::strtol(v, &end, 10);
    return *end == '\0' && errno == 0 && r >= 0 && r <= INT_MAX ? static_cast<int>(r) : -1;
  }
  return -1;
}

const Info& info() { return g_info; }

std::string describe() {
  return str("rank ", g_info.rank, " of ", g_info.size, " (host ", g_info.host, ", local rank ", g_info.local_rank,
             ")");
}

void set_timeout(double seconds) {
  HG_CHECK(seconds > 0, "dist: the collective timeout must be > 0 s, got ", seconds);
  g_timeout = seconds;
}
double timeout() { return g_timeout; }

void init() {
  if (g_initialised) return;
  g_initialised = true;
  g_info.host = host_name();
  if (!launched_by_mpirun()) return;  // a plain process: rank 0 of 1, no MPI call ever
#ifdef HAARGRAD_WITH_MPI
#ifdef HAARGRAD_WITH_CUDA
  if (const int lr = launcher_local_rank(); lr >= 0) pick_gpu(lr);
#endif
  int provided = 0;
  // FUNNELED: only the main thread calls MPI (loader threads never do; the NCCL watchdog only
  // calls MPI_Abort, which Open MPI and MPICH allow from any thread).
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    throw Error("dist: MPI_Init_thread failed (is this process started by a matching mpirun?)");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  g_info.mpi = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_info.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_info.size);
  MPI_Comm local;
  detail::mpi_check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_info.rank, MPI_INFO_NULL, &local),
                    "MPI_Comm_split_type", "finding the processes of this machine");
  MPI_Comm_rank(local, &g_info.local_rank);
  MPI_Comm_size(local, &g_info.local_size);
  MPI_Comm_free(&local);
#ifdef HAARGRAD_WITH_CUDA
  if (launcher_local_rank() < 0) pick_gpu(g_info.local_rank);  // the launcher did not say: the split did
#endif
#else
  const char* n = env("OMPI_COMM_WORLD_SIZE") ? env("OMPI_COMM_WORLD_SIZE") : env("PMI_SIZE");
  HG_CHECK(!n || std::atoi(n) <= 1, "dist: started by mpirun with ", n,
           " processes, but this haargrad was built without MPI (install libopenmpi-dev, "
           "scripts/install-deps.sh, and rebuild)");
#endif
}

void finalize() {
  shutdown_collectives();
#ifdef HAARGRAD_WITH_MPI
  if (!g_info.mpi) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  barrier("finalize");
  MPI_Finalize();
  g_info.mpi = false;
#endif
}

std::string rank_error(const std::string& message) {
  // messages of dist/ already start with "rank R of N (...)": name the rank once
  const std::string who = describe();
  const std::string text = message.rfind(who, 0) == 0 ? message.substr(std::min(message.size(), who.size() + 2)) : message;
  return str("error on ", who, ": ", text);
}

[[noreturn]] void abort_all(const std::string& message, int code) {
  static std::mutex mu;  // one message, even when several threads fail at once
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "haargrad: %s\n", rank_error(message).c_str());
  std::fflush(stderr);
#ifdef HAARGRAD_WITH_MPI
  if (g_info.mpi) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::_Exit(code);
}

// ---- timed waits -----------------------------------------------------------------------------------

#ifdef HAARGRAD_WITH_MPI
namespace detail {

void mpi_check(int rc, const char* call, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(str(describe(), ": MPI error in ", call, " (", what, "): ", std::string(msg, static_cast<size_t>(len))));
}

void wait(MPI_Request& request, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  for (int polls = 0;; ++polls) {
    int done = 0;
    mpi_check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test", what);
    if (done) return;
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > g_timeout)
      throw Error(str(describe(), ": '", what, "' did not complete within ", g_timeout,
                      " s (dist_timeout): another rank failed, stalled, or called a different collective"));
    // Poll hard for a moment (collectives usually finish in microseconds), then give the core
    // away: with more ranks than cores a spinning rank would starve the one it waits for.
    if (polls > 200) std::this_thread::sleep_for(std::chrono::microseconds(polls > 2000 ? 500 : 50));
  }
}

void abandon(MPI_Request request, std::shared_ptr<const void> buffers) {
  static std::mutex mu;
  static auto* kept = new std::vector<std::pair<MPI_Request, std::shared_ptr<const void>>>();  // never freed
  std::lock_guard<std::mutex> lock(mu);
  kept->emplace_back(request, std::move(buffers));
}

}  // namespace detail
#endif

// ---- host collectives ------------------------------------------------------------------------------

void barrier(const char* what) {
#ifdef HAARGRAD_WITH_MPI
  if (!g_info.mpi) return;
  MPI_Request r;
  detail::mpi_check(MPI_Ibarrier(MPI_COMM_WORLD, &r), "MPI_Ibarrier", what);
  detail::wait_or_abandon(r, std::make_shared<int>(0), what);
#else
  (void)what;
#endif
}

std::vector<double> sum(const std::vector<double>& values, const char* what) {
#ifdef HAARGRAD_WITH_MPI
  if (g_info.mpi && g_info.size > 1) {
    auto buf = std::make_shared<std::vector<double>>(values);  // in place; abandoned on a timeout
    MPI_Request r;
    detail::mpi_check(MPI_Iallreduce(MPI_IN_PLACE, buf->data(), static_cast<int>(buf->size()), MPI_DOUBLE, MPI_SUM,
                                     MPI_COMM_WORLD, &r),
                      "MPI_Iallreduce", what);
    detail::wait_or_abandon(r, buf, what);
    return *buf;
  }
#else
  (void)what;
#endif
  return values;
}

bool any(bool flag, const char* what) { return sum({flag ? 1.0 : 0.0}, what)[0] > 0; }

std::string broadcast(const std::string& s, int root, const char* what) {
#ifdef HAARGRAD_WITH_MPI
  if (!g_info.mpi || g_info.size == 1) return s;
  auto n = std::make_shared<uint64_t>(s.size());
  MPI_Request r;
  detail::mpi_check(MPI_Ibcast(n.get(), 1, MPI_UINT64_T, root, MPI_COMM_WORLD, &r), "MPI_Ibcast", what);
  detail::wait_or_abandon(r, n, what);
  auto out = std::make_shared<std::string>(g_info.rank == root ? s : std::string(*n, '\0'));
  detail::mpi_check(MPI_Ibcast(out->data(), static_cast<int>(*n), MPI_CHAR, root, MPI_COMM_WORLD, &r), "MPI_Ibcast",
                    what);
  detail::wait_or_abandon(r, out, what);
  return *out;
#else
  (void)root;
  (void)what;
  return s;
#endif
}

std::vector<uint64_t> all_gather(const std::vector<uint64_t>& values, const char* what) {
#ifdef HAARGRAD_WITH_MPI
  if (g_info.mpi && g_info.size > 1) {
    auto bufs = std::make_shared<std::pair<std::vector<uint64_t>, std::vector<uint64_t>>>(
        values, std::vector<uint64_t>(values.size() * static_cast<size_t>(g_info.size)));
    MPI_Request r;
    detail::mpi_check(MPI_Iallgather(bufs->first.data(), static_cast<int>(values.size()), MPI_UINT64_T,
                                     bufs->second.data(), static_cast<int>(values.size()), MPI_UINT64_T,
                                     MPI_COMM_WORLD, &r),
                      "MPI_Iallgather", what);
    detail::wait_or_abandon(r, bufs, what);
    return bufs->second;
  }
#else
  (void)what;
#endif
  return values;
}

}  // namespace hg::dist
