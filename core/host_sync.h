// A count of the host waits on the GPU that haargrad's own code asks for: copies to the host
// (Tensor::to(cpu), item()), copies from pageable host memory (the runtime waits for the stream
// before them) and hg::cuda::synchronize(). A training step that queues its work without waiting
// has none: `haargrad bench` prints the count of its timed steps (column syncs). Waits inside
// libraries (cuBLAS, cuDNN, NCCL, nvJPEG) and the system allocations (counted apart,
// memory::stats) are not in it.
#pragma once

#include <cstdint>

namespace hg {

/// Adds one host wait (thread-safe).
void note_host_sync();
/// Host waits noted since the process started.
int64_t host_syncs();

}  // namespace hg
