// The stream haargrad queues its GPU work on. Only for files built with CUDA.
#pragma once

#include <cuda_runtime.h>

namespace hg::cuda {

namespace detail {
inline thread_local cudaStream_t t_stream = cudaStreamPerThread;  // StreamScope sets it
}

/// The calling thread's stream for every kernel, copy, event and library call of haargrad: the
/// per-thread default stream (cudaStreamPerThread), so each thread (the training thread, the
/// data-parallel ranks' threads in tests) has one stream per device without creating any; inside
/// a StreamScope, that scope's stream.
/// Why not the legacy default stream (0): it cannot be captured into a CUDA graph
/// (cudaStreamBeginCapture refuses it). The per-thread stream still synchronises with the legacy
/// stream, so work that a library queues there stays ordered with ours.
inline cudaStream_t stream() { return detail::t_stream; }

/// Queues this thread's GPU work on `s` while it lives (kernels/cuda/overlap.h uses it for work
/// that runs beside the main stream's; ordering the two streams is the caller's job).
class StreamScope {
 public:
  explicit StreamScope(cudaStream_t s) : saved_(detail::t_stream) { detail::t_stream = s; }
  ~StreamScope() { detail::t_stream = saved_; }
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  cudaStream_t saved_;
};

}  // namespace hg::cuda
