// BlockCache: the caching allocator behind memory::allocate (everything but the tape arena).
//
// Memory is taken from the system in segments (cudaMalloc on the GPU, aligned_alloc on the CPU) and
// carved into blocks. A request takes the smallest free block that fits (best fit) and splits off
// the rest as a new free block; a freed block merges with free neighbours of its segment. So a
// freed 600 MB gradient can serve two 300 MB ones later, and the bytes held from the system stay
// close to the peak of live bytes, while a steady-state training step still makes no system
// allocation (the same requests find the same free blocks). The policy follows PyTorch's CUDA
// caching allocator: requests up to 1 MiB share 2 MiB segments ("small" pool), requests up to
// 10 MiB get 20 MiB segments, larger ones a segment of their size rounded up to 2 MiB ("large"
// pool); small and large blocks never mix, and a large block is split only when at least 1 MiB
// would remain, which keeps fragmentation low.
//
// Not thread-safe: memory.cpp calls it under the device's mutex. Sizes in bytes, multiples of 256.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <unordered_map>

#include "core/dtype.h"

namespace hg::memory::detail {

class BlockCache {
 public:
  explicit BlockCache(Device device) : device_(device) {}
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  /// A block of at least `bytes`. Adds the bytes of a new segment, if one was taken from the
  /// system, to *reserved_delta. Throws hg::Error (from memory::system_alloc) when the system has
  /// no memory left; the caller may release_free_segments() and retry.
  void* allocate(size_t bytes, int64_t* reserved_delta);
  /// Returns a block from allocate() to the cache (merging it with free neighbours).
  void free(void* p);
  /// Gives every segment with no block in use back to the system; returns the bytes released.
  size_t release_free_segments();
  /// Number of free blocks and their bytes (tests, diagnostics).
  size_t free_blocks() const { return small_.size() + large_.size(); }

 private:
  struct Block {
    char* ptr;
    size_t size;
    bool small;            // pool
    bool free = true;
    Block* prev = nullptr;  // neighbours inside the segment
    Block* next = nullptr;
  };
  struct BySizeThenAddress {
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };
  using Pool = std::set<Block*, BySizeThenAddress>;
  Pool& pool(bool small) { return small ? small_ : large_; }

  Device device_;
  Pool small_, large_;                        // free blocks
  std::unordered_map<void*, Block*> in_use_;  // handed-out blocks by address
};

}  // namespace hg::memory::detail
