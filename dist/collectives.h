// Collectives on tensors, in place, started asynchronously: CPU tensors through MPI (non-blocking
// MPI_I* calls), CUDA tensors through NCCL on a communication stream of their own. The data-parallel
// trainer (train/data_parallel.h) reduces gradient buckets with them while the backward goes on.
//
// Rules: every rank calls the same collectives in the same order with the same numel and dtype;
// tensors are contiguous; CPU dtypes f32, f64, i64, CUDA dtypes f32, f64, bf16, i64. In a single
// process (size() == 1) a CPU collective does nothing (the sum over one rank is the tensor itself);
// a CUDA one still runs through NCCL when the build has it, so one GPU exercises the NCCL path.
//
// Ordering on the GPU: the collective starts after all work queued so far on the default stream
// (where every haargrad kernel runs), and Work::wait() makes later default-stream work wait for it
// without blocking the host. A watchdog thread ends the run (abort_all, naming the rank and the
// call) when a NCCL collective has not finished after dist::timeout() seconds or NCCL reports an
// asynchronous error. On the CPU, wait() polls MPI and throws hg::Error after the timeout.
#pragma once

#include <memory>
#include <string>

#include "core/tensor.h"

namespace hg::dist {

enum class Reduce { sum, avg };

namespace detail {
struct WorkImpl {
  virtual ~WorkImpl() = default;
  virtual void wait() = 0;
};
}  // namespace detail

/// A collective in flight. Default-constructed: already complete.
class Work {
 public:
  Work() = default;
  explicit Work(std::shared_ptr<detail::WorkImpl> impl) : impl_(std::move(impl)) {}
  /// CPU: blocks until the result is in the tensor (throws hg::Error on timeout / MPI error).
  /// CUDA: orders later default-stream work after the collective; returns at once. Idempotent.
  void wait();

 private:
  std::shared_ptr<detail::WorkImpl> impl_;
};

/// t = sum (or mean) of t over the ranks.
Work all_reduce(const Tensor& t, Reduce op, const std::string& what);
/// t holds size() equal chunks of numel / size() elements (numel must divide); afterwards chunk
/// rank() holds the sum (or mean) over the ranks of that chunk. Other chunks: unspecified.
Work reduce_scatter(const Tensor& t, Reduce op, const std::string& what);
/// t holds size() equal chunks; chunk r of rank r is sent; afterwards every chunk holds its rank's.
Work all_gather(const Tensor& t, const std::string& what);
/// t = rank root's t.
Work broadcast(const Tensor& t, int root, const std::string& what);

/// True when CUDA tensors go through NCCL (the build has NCCL).
bool has_nccl();
/// Ends the NCCL communicator and its watchdog (finalize() calls it); idempotent.
void shutdown_collectives();

}  // namespace hg::dist
