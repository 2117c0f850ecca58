// Tensor collectives: CPU through non-blocking MPI, CUDA through NCCL (dist/nccl_backend.cpp).
#include "dist/collectives.h"

#include <climits>
#include <cstring>
#include <functional>

#include "core/error.h"
#include "dist/mpi_util.h"
#include "dist/nccl_backend.h"
#include "dist/process_group.h"

namespace hg::dist {
namespace {

void check_tensor(const char* op, const Tensor& t, const std::string& what) {
  HG_CHECK(t.defined() && t.is_contiguous(), "dist::", op, " (", what, "): the tensor must be defined and contiguous, got ",
           t.defined() ? t.describe() : std::string("undefined"));
}

int64_t chunk_numel(const char* op, const Tensor& t, const std::string& what) {
  HG_CHECK(t.numel() % size() == 0, "dist::", op, " (", what, "): ", t.describe(), " does not split into ", size(),
           " equal chunks");
  return t.numel() / size();
}

#ifdef HAARGRAD_WITH_MPI
MPI_Datatype mpi_type(const Tensor& t, const std::string& what) {
  switch (t.dtype()) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i64: return MPI_INT64_T;
    default: break;
  }
  throw Error(str("dist (", what, "): CPU collectives take f32, f64 or i64 tensors, got ", t.describe()));
}

int mpi_count(int64_t n, const std::string& what) {
  HG_CHECK(n <= INT_MAX, "dist (", what, "): ", n, " elements exceed one MPI call's count (INT_MAX); use smaller buckets");
  return static_cast<int>(n);
}

// One MPI request, the tensor it works in, and what finishes it on the host (averaging, moving
// the reduce-scatter chunk).
struct MpiWork : detail::WorkImpl {
  MPI_Request request = MPI_REQUEST_NULL;
  Tensor tensor;  // keeps the buffer alive while MPI may write into it
  std::string what;
  std::function<void()> finish;
  bool done = false, failed = false;
  void wait() override {
    if (done) return;
    HG_CHECK(!failed, "dist: '", what, "' failed before");
    try {
      detail::wait(request, what);
    } catch (...) {
      failed = true;
      detail::abandon(request, std::make_shared<Tensor>(tensor));
      throw;
    }
    done = true;
    if (finish) finish();
  }
  ~MpiWork() override {
    // Work is always waited for on the normal path; one dropped on an error path is abandoned
    // (never waited for here: that could block an unwinding rank for the whole timeout).
    if (!done && !failed && request != MPI_REQUEST_NULL) detail::abandon(request, std::make_shared<Tensor>(tensor));
  }
};

// t /= size(), element-wise (the mean over ranks after a sum).
void divide_by_size(void* data, int64_t n, DType dt) {
  if (dt == DType::f32) {
    float* p = static_cast<float*>(data);
    const float s = static_cast<float>(size());
    for (int64_t i = 0; i < n; ++i) p[i] /= s;
  } else if (dt == DType::f64) {
    double* p = static_cast<double*>(data);
    const double s = static_cast<double>(size());
    for (int64_t i = 0; i < n; ++i) p[i] /= s;
  } else {
    throw Error(str("dist: a mean over ranks needs a floating tensor, got ", dtype_name(dt)));
  }
}
#endif

bool cpu_is_local() { return !info().mpi || size() == 1; }

}  // namespace

void Work::wait() {
  if (impl_) impl_->wait();
}

bool has_nccl() {
#ifdef HAARGRAD_WITH_NCCL
  return true;
#else
  return false;
#endif
}

void shutdown_collectives() {
#ifdef HAARGRAD_WITH_NCCL
  detail::nccl_shutdown();
#endif
}

#ifdef HAARGRAD_WITH_NCCL
#define HG_DIST_CUDA(op, count, reduce, root)                                                                   \
  if (t.device() == Device::cuda)                                                                               \
  return Work(detail::nccl_start(detail::NcclOp::op, t.data_ptr(), static_cast<size_t>(count), t.dtype(), reduce, \
                                 root, what))
#else
#define HG_DIST_CUDA(op, count, reduce, root)                                                                \
  if (t.device() == Device::cuda) {                                                                          \
    HG_CHECK(size() == 1, "dist (", what, "): CUDA tensors across ", size(),                                 \
             " processes need NCCL, and this haargrad was built without it (CUDA's nccl.h / libnccl)");      \
    return Work();                                                                                           \
  }
#endif

Work all_reduce(const Tensor& t, Reduce op, const std::string& what) {
  check_tensor("all_reduce", t, what);
  HG_DIST_CUDA(all_reduce, t.numel(), op, 0);
  if (cpu_is_local()) return Work();
#ifdef HAARGRAD_WITH_MPI
  auto w = std::make_shared<MpiWork>();
  w->what = what;
  w->tensor = t;
  detail::mpi_check(MPI_Iallreduce(MPI_IN_PLACE, t.data_ptr(), mpi_count(t.numel(), what), mpi_type(t, what), MPI_SUM,
                                   MPI_COMM_WORLD, &w->request),
                    "MPI_Iallreduce", what);
  if (op == Reduce::avg) w->finish = [t] { divide_by_size(t.data_ptr(), t.numel(), t.dtype()); };
  return Work(w);
#else
  (void)op;
  return Work();
#endif
}

Work reduce_scatter(const Tensor& t, Reduce op, const std::string& what) {
  check_tensor("reduce_scatter", t, what);
  const int64_t chunk = chunk_numel("reduce_scatter", t, what);
  HG_DIST_CUDA(reduce_scatter, t.numel(), op, 0);
  if (cpu_is_local()) return Work();
#ifdef HAARGRAD_WITH_MPI
  auto w = std::make_shared<MpiWork>();
  w->what = what;
  w->tensor = t;
  // In place, MPI puts this rank's reduced chunk at the START of the buffer; finish() moves it to
  // its own position (chunk rank()), where the NCCL version leaves it too.
  detail::mpi_check(MPI_Ireduce_scatter_block(MPI_IN_PLACE, t.data_ptr(), mpi_count(chunk, what), mpi_type(t, what),
                                              MPI_SUM, MPI_COMM_WORLD, &w->request),
                    "MPI_Ireduce_scatter_block", what);
  w->finish = [t, chunk, op] {
    const size_t bytes = static_cast<size_t>(chunk) * dtype_size(t.dtype());
    char* base = static_cast<char*>(t.data_ptr());
    if (rank() > 0) std::memcpy(base + bytes * static_cast<size_t>(rank()), base, bytes);
    if (op == Reduce::avg)
      divide_by_size(base + bytes * static_cast<size_t>(rank()), chunk, t.dtype());
  };
  return Work(w);
#else
  (void)chunk;
  (void)op;
  return Work();
#endif
}

Work all_gather(const Tensor& t, const std::string& what) {
  check_tensor("all_gather", t, what);
  const int64_t chunk = chunk_numel("all_gather", t, what);
  HG_DIST_CUDA(all_gather, t.numel(), Reduce::sum, 0);
  if (cpu_is_local()) return Work();
#ifdef HAARGRAD_WITH_MPI
  auto w = std::make_shared<MpiWork>();
  w->what = what;
  w->tensor = t;
  const int n = mpi_count(chunk, what);
  detail::mpi_check(MPI_Iallgather(MPI_IN_PLACE, n, mpi_type(t, what), t.data_ptr(), n, mpi_type(t, what),
                                   MPI_COMM_WORLD, &w->request),
                    "MPI_Iallgather", what);
  return Work(w);
#else
  (void)chunk;
  return Work();
#endif
}

Work broadcast(const Tensor& t, int root, const std::string& what) {
  check_tensor("broadcast", t, what);
  HG_CHECK(root >= 0 && root < size(), "dist::broadcast (", what, "): root ", root, " is not a rank of ", size());
  HG_DIST_CUDA(broadcast, t.numel(), Reduce::sum, root);
  if (cpu_is_local()) return Work();
#ifdef HAARGRAD_WITH_MPI
  auto w = std::make_shared<MpiWork>();
  w->what = what;
  w->tensor = t;
  detail::mpi_check(MPI_Ibcast(t.data_ptr(), mpi_count(t.numel(), what), mpi_type(t, what), root, MPI_COMM_WORLD,
                               &w->request),
                    "MPI_Ibcast", what);
  return Work(w);
#else
  return Work();
#endif
}

}  // namespace hg::dist
