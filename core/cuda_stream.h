// The stream haargrad queues its GPU work on. Only for files built with CUDA.
#pragma once

#include <cuda_runtime.h>

namespace hg::cuda {

/// The calling thread's stream for every kernel, copy, event and library call of haargrad: the
/// per-thread default stream (cudaStreamPerThread), so each thread (the training thread, the
/// data-parallel ranks' threads in tests) has one stream per device without creating any.
/// Why not the legacy default stream (0): it cannot be captured into a CUDA graph
/// (cudaStreamBeginCapture refuses it). The per-thread stream still synchronises with the legacy
/// stream, so work that a library queues there stays ordered with ours.
inline cudaStream_t stream() { return cudaStreamPerThread; }

}  // namespace hg::cuda
