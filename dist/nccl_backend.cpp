// NCCL collectives for CUDA tensors, their stream, and the watchdog (see nccl_backend.h).
#include "dist/nccl_backend.h"

#ifdef HAARGRAD_WITH_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/cuda_stream.h"
#include "core/error.h"
#include "dist/mpi_util.h"
#include "dist/process_group.h"

namespace hg::dist::detail {
namespace {

using Clock = std::chrono::steady_clock;

void cuda_check(cudaError_t e, const char* call, const std::string& what) {
  if (e != cudaSuccess)
    throw Error(str(describe(), ": CUDA error in ", call, " (", what, "): ", cudaGetErrorString(e)));
}

void nccl_check(ncclResult_t r, const char* call, const std::string& what) {
  if (r != ncclSuccess)
    throw Error(str(describe(), ": NCCL error in ", call, " (", what, "): ", ncclGetErrorString(r), " ",
                    ncclGetLastError(nullptr)));
}

ncclDataType_t nccl_type(DType t, const std::string& what) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::bf16: return ncclBfloat16;
    case DType::i64: return ncclInt64;
    default: break;
  }
  throw Error(str("dist (", what, "): NCCL collectives take f32, f64, bf16 or i64, got ", dtype_name(t)));
}

// A CUDA event owned by whoever still needs it (the Work and the watchdog).
struct Event {
  cudaEvent_t ev = nullptr;
  Event() { cuda_check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate", "collective"); }
  ~Event() { cudaEventDestroy(ev); }
};

// Ends the run when a watched collective outlives its deadline or NCCL reports an error. Runs on a
// thread of its own because the host may be blocked elsewhere (e.g. reading a loss back) while
// the GPU waits on a collective that never completes.
class Watchdog {
 public:
  explicit Watchdog(ncclComm_t comm) : comm_(comm), thread_([this] { loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void watch(std::shared_ptr<Event> e, const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back({std::move(e), Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                       std::chrono::duration<double>(timeout())),
                      what});
  }

 private:
  struct Item {
    std::shared_ptr<Event> event;
    Clock::time_point deadline;
    std::string what;
  };
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      ncclResult_t async = ncclSuccess;
      if (const ncclResult_t r = ncclCommGetAsyncError(comm_, &async); r != ncclSuccess)
        fail(str("ncclCommGetAsyncError failed: ", ncclGetErrorString(r)));
      if (async != ncclSuccess && async != ncclInProgress)
        fail(str("NCCL reported an asynchronous error: ", ncclGetErrorString(async)));
      for (size_t i = 0; i < items_.size();) {
        const cudaError_t q = cudaEventQuery(items_[i].event->ev);
        if (q == cudaSuccess) {
          items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(i));
          continue;
        }
        if (q != cudaErrorNotReady) fail(str("'", items_[i].what, "' failed: ", cudaGetErrorString(q)));
        if (Clock::now() > items_[i].deadline)
          fail(str("'", items_[i].what, "' did not complete within ", timeout(),
                   " s (dist_timeout): another rank failed, stalled, or called a different collective"));
        ++i;
      }
    }
  }
  [[noreturn]] void fail(const std::string& msg) {
    ncclCommAbort(comm_);  // frees the GPU from the stuck kernel so the process can end
    abort_all(msg);
  }

  ncclComm_t comm_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Item> items_;
  bool stop_ = false;
  std::thread thread_;
};

struct Nccl {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  std::unique_ptr<Watchdog> watchdog;
};

Nccl* g_nccl = nullptr;  // made by the first CUDA collective, ended by nccl_shutdown()

Nccl& nccl() {
  if (g_nccl) return *g_nccl;
  auto made = std::make_unique<Nccl>();
  Nccl& n = *made;
  const std::string what = "NCCL communicator set-up";
  auto id = std::make_shared<ncclUniqueId>();
  if (rank() == 0) nccl_check(ncclGetUniqueId(id.get()), "ncclGetUniqueId", what);
#ifdef HAARGRAD_WITH_MPI
  if (info().mpi && size() > 1) {  // the id travels over MPI, as in llm.c
    MPI_Request r;
    mpi_check(MPI_Ibcast(id.get(), sizeof(ncclUniqueId), MPI_BYTE, 0, MPI_COMM_WORLD, &r), "MPI_Ibcast", what);
    wait_or_abandon(r, id, what);
  }
#endif
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice", what);
  // ncclCommInitRank returns when every rank has joined; a barrier with a timeout first makes a
  // missing rank a clear error instead of a silent hang.
  barrier("NCCL communicator set-up");
  nccl_check(ncclCommInitRank(&n.comm, size(), *id, rank()), "ncclCommInitRank", what);
  cuda_check(cudaStreamCreateWithFlags(&n.stream, cudaStreamNonBlocking), "cudaStreamCreate", what);
  n.watchdog = std::make_unique<Watchdog>(n.comm);
  g_nccl = made.release();
  return n;
}

struct NcclWork : WorkImpl {
  std::shared_ptr<Event> done;
  void wait() override {
    // later work on the thread's stream, where haargrad's kernels run, waits for it
    cuda_check(cudaStreamWaitEvent(hg::cuda::stream(), done->ev, 0), "cudaStreamWaitEvent",
               "collective");
  }
};

}  // namespace

std::shared_ptr<WorkImpl> nccl_start(NcclOp op, void* data, size_t count, DType dtype, Reduce reduce, int root,
                                     const std::string& what) {
  Nccl& n = nccl();
  const ncclDataType_t dt = nccl_type(dtype, what);
  const ncclRedOp_t rop = reduce == Reduce::avg ? ncclAvg : ncclSum;
  const size_t chunk = count / static_cast<size_t>(size());
  char* base = static_cast<char*>(data);
  const size_t chunk_bytes = chunk * dtype_size(dtype);

  auto ready = std::make_shared<Event>();  // everything queued so far on the thread's stream
  cuda_check(cudaEventRecord(ready->ev, hg::cuda::stream()), "cudaEventRecord", what);
  cuda_check(cudaStreamWaitEvent(n.stream, ready->ev, 0), "cudaStreamWaitEvent", what);
  switch (op) {
    case NcclOp::all_reduce:
      nccl_check(ncclAllReduce(data, data, count, dt, rop, n.comm, n.stream), "ncclAllReduce", what);
      break;
    case NcclOp::reduce_scatter:  // in place: the result lands on this rank's own chunk
      nccl_check(ncclReduceScatter(data, base + chunk_bytes * static_cast<size_t>(rank()), chunk, dt, rop, n.comm,
                                   n.stream),
                 "ncclReduceScatter", what);
      break;
    case NcclOp::all_gather:  // in place: this rank sends its own chunk
      nccl_check(ncclAllGather(base + chunk_bytes * static_cast<size_t>(rank()), data, chunk, dt, n.comm, n.stream),
                 "ncclAllGather", what);
      break;
    case NcclOp::broadcast:
      nccl_check(ncclBroadcast(data, data, count, dt, root, n.comm, n.stream), "ncclBroadcast", what);
      break;
  }
  auto work = std::make_shared<NcclWork>();
  work->done = std::make_shared<Event>();
  cuda_check(cudaEventRecord(work->done->ev, n.stream), "cudaEventRecord", what);
  n.watchdog->watch(work->done, what);
  return work;
}

// Teardown, also on the way out of a failed run: a failing call is reported (a warning naming it)
// but does not throw, so it cannot hide the error that ended the run, and the rest still runs.
void nccl_shutdown() {
  if (!g_nccl) return;  // no CUDA collective ran
  const auto warn_cuda = [](cudaError_t e, const char* call) {
    if (e != cudaSuccess)
      spdlog::warn("{}: at shutdown, {} failed: {}", describe(), call, cudaGetErrorString(e));
  };
  warn_cuda(cudaStreamSynchronize(g_nccl->stream), "cudaStreamSynchronize");
  g_nccl->watchdog.reset();
  if (const ncclResult_t r = ncclCommDestroy(g_nccl->comm); r != ncclSuccess)
    spdlog::warn("{}: at shutdown, ncclCommDestroy failed: {}", describe(), ncclGetErrorString(r));
  warn_cuda(cudaStreamDestroy(g_nccl->stream), "cudaStreamDestroy");
  delete g_nccl;
  g_nccl = nullptr;
}

}  // namespace hg::dist::detail
#endif
