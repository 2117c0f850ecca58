// Page-locked ("pinned") host memory for batches on their way to the GPU.
//
// Why: a copy from ordinary (pageable) host memory goes through a driver staging buffer and blocks
// the host; from page-locked memory the GPU's copy engine reads the bytes directly, so
// Tensor::to(Device::cuda) can queue the copy with cudaMemcpyAsync on the default stream and return
// at once (PyTorch's DataLoader(pin_memory=True) plus .to(non_blocking=True)).
//
// The catch is lifetime: a block may be freed on the host while its copy is still queued. So every
// block has a CUDA event; record_pinned_use() records it after the copy is queued, and a freed
// block is handed out again only once its event has completed. A request reuses the smallest free
// block of its size to twice that, and a new block is an eighth larger than asked: batches of crops
// differ in bytes from batch to batch, and a steady-state epoch then makes no cudaHostAlloc call
// and holds a few blocks (exact sizes made a new block per batch, kept for ever).
//
// Without CUDA, or without a usable GPU, allocate_pinned() returns ordinary host memory from
// memory::allocate and is_pinned() is false for it: callers need no special case.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace hg::memory {

/// `bytes` of host memory, page-locked when a GPU is usable. Page-locked blocks are counted in
/// pinned_stats(); the fallback is an ordinary Device::cpu allocation (memory::stats). Throws
/// hg::Error when the host is out of memory.
std::shared_ptr<void> allocate_pinned(size_t bytes);

/// True when `p` points into a live page-locked block from allocate_pinned().
bool is_pinned(const void* p);

/// Tells the allocator that work queued on the default CUDA stream so far reads the pinned block
/// containing `p`: the block is not reused before that work completes. No-op for other pointers.
/// Throws hg::Error when recording the CUDA event fails.
void record_pinned_use(const void* p);

/// Byte counts of the pinned pool, in bytes.
struct PinnedStats {
  int64_t live = 0;           ///< bytes in blocks handed out
  int64_t reserved = 0;       ///< bytes page-locked from the system (live + cached)
  int64_t system_allocs = 0;  ///< cudaHostAlloc calls since process start
};
PinnedStats pinned_stats();

}  // namespace hg::memory
