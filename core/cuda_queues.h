// How many hardware work queues the CUDA driver gives this process's streams
// (CUDA_DEVICE_MAX_CONNECTIONS, default 8). Streams share the queues round-robin, and work in one
// queue runs in order: two streams on one queue wait for each other's work as if they were one.
// Measured on the H200 (fourteenth session, docs/perf-notes.md): with the default 8, the JPEG
// decoder's stream shared a queue with the training stream, so each nvJPEG decode waited for the
// training work queued before it, a whole step when the step is one CUDA graph (the decoder
// thread 39 ms a batch instead of ~11); with 32 queues, 18 ms and the loader keeps up with the
// graphed step.
#pragma once

#include <string>

namespace hg {

/// Sets CUDA_DEVICE_MAX_CONNECTIONS to 32 (the driver's maximum) unless the environment already
/// sets it (a user's choice stays). The driver reads it when it creates the process's CUDA
/// context, so call this before the first CUDA call (the `haargrad` program does, first thing in
/// main). Returns the value in effect afterwards. Harmless without CUDA.
std::string default_cuda_queues();

}  // namespace hg
