// Two streams inside one op: work on a side stream of the calling thread, beside the work the
// caller queues on its own stream meanwhile, joined back before the op goes on. For ops made of
// independent chains of small, latency-bound kernels (the WTConv split path's levels >= 1 beside
// its level 0 and base path: docs/fused-wtconv.md, section 11), which one stream runs one after
// the other with most of the GPU idle.
//
//   {
//     cuda::Overlap ov;          // the side stream starts after all work queued so far
//     ov.side([&] { ... });      // queued on the side stream
//     ...                        // queued on the thread's stream, beside the side work
//   }                            // the thread's stream waits for the side work
//
// Safe with the caching allocator (core/memory.h), which orders the reuse of a freed block by one
// stream: an Overlap defers every free of its thread until the join (memory::DeferFreesScope), so
// no block that one stream may still use goes to the other. Captured into a CUDA graph like any
// fork and join of streams (the side stream joins the capture through the fork's event). Tensors
// made on the side stream and read after the join need nothing more. Only for files built with
// CUDA.
#pragma once

#include <cuda_runtime.h>

#include "core/cuda_stream.h"
#include "core/memory.h"

namespace hg::cuda {

class Overlap {
 public:
  /// Forks: the thread's side stream (made on first use, non-blocking) waits for everything
  /// queued on the thread's stream so far. Throws hg::Error on a CUDA error, or when called
  /// inside another Overlap's side work.
  Overlap();
  /// Joins: the thread's stream waits for all side work (errors printed, not thrown); then the
  /// deferred frees go back to the allocator.
  ~Overlap();
  Overlap(const Overlap&) = delete;
  Overlap& operator=(const Overlap&) = delete;

  /// Runs fn with this thread's GPU work queued on the side stream.
  template <class F>
  void side(F&& fn) {
    StreamScope on_side(side_);
    fn();
  }

 private:
  memory::DeferFreesScope defer_;  // first in, last out: frees stay deferred until after the join
  cudaStream_t main_, side_;
};

}  // namespace hg::cuda
