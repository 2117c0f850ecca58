// BlockCache: the allocator behind memory::allocate, one per device (core/memory.h says why).
//
// Memory is taken from the system in segments (cudaMalloc on the GPU, aligned_alloc on the CPU) and
// carved into blocks. A request takes the smallest free block that fits (best fit) and splits off
// the rest as a new free block; a freed block merges with free neighbours of its segment. So a
// freed 600 MB activation can serve two 300 MB gradients later, and a steady-state training step
// makes no system allocation (the same requests find the same free blocks).
//
// Four pools, which never share a segment:
//   * by size, as PyTorch's CUDA caching allocator: requests up to 1 MiB share 2 MiB segments
//     (small), requests up to 10 MiB get 20 MiB segments, larger ones a segment of their size
//     rounded up to 2 MiB (large); a large block is split only when at least 1 MiB would remain;
//   * by lifetime, from the category: parameters, gradients and optimizer state live as long as
//     the model (persistent); activations and workspace live within a step (step), so the
//     persistent blocks, made during the first step, never pin a hole in the step's memory.
// And one rule for the large step pool, at the end of each step (step_done, called when a
// backward is done): if the step had to take new segments, its segments that are entirely free
// are given back and replaced by one segment -- the first time as large as the step's peak of live
// bytes in that pool (a perfect packing), later larger by half of what the step still had to take
// (what a step needs in one segment is less than what it took in several). Segments never shrink
// at a step's end, so this ends: every step makes the same requests in the same order, and once
// they fit they find the same free blocks. Measured on recorded ConvNeXt-T / WTConvNeXt-T steps at
// batch 128 (docs/perf-notes.md): no system allocation from the third or fourth step on, bytes
// held 1-8% above the live peak (tests/train/step_memory_test.cpp asserts <= 10%).
//
// The system allocation is a parameter (SystemMemory), so the same code runs on the GPU, on the
// CPU and in the replay of a recorded allocation trace (core/alloc_trace.h), where it is faked.
// Not thread-safe: memory.cpp calls it under the device's mutex. Sizes in bytes, multiples of 256.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <unordered_map>

#include "core/memory.h"

namespace hg::memory::detail {

/// Where segments come from: `alloc(bytes)` returns at least `bytes` bytes or throws hg::Error
/// (out of memory); `free(p)` gives back what `alloc` returned and must not throw.
struct SystemMemory {
  std::function<void*(size_t)> alloc;
  std::function<void(void*)> free;
};

class BlockCache {
 public:
  explicit BlockCache(SystemMemory system) : system_(std::move(system)) {}
  ~BlockCache();  // gives every segment back (blocks still handed out included)
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  /// A block of at least `bytes` for an allocation of `category`. Throws hg::Error (from the
  /// system allocation) when the system has no memory left; the caller may
  /// release_free_segments() and retry.
  void* allocate(size_t bytes, Category category);
  /// Returns a block from allocate() to the cache (merging it with free neighbours).
  void free(void* p);
  /// The end of a training step (see the file comment): may replace the step pool's free
  /// segments by one. Never throws (a failed system allocation leaves the segments to the next
  /// step).
  void step_done();
  /// Gives every segment with no block in use back to the system; returns the bytes released.
  size_t release_free_segments();

  /// Bytes held from the system (all segments).
  int64_t reserved() const { return reserved_; }
  /// Number of system allocations made so far.
  int64_t system_allocs() const { return system_allocs_; }
  /// Number of free blocks (tests, diagnostics).
  size_t free_blocks() const;

 private:
  enum PoolId : uint8_t { kSmallStep, kLargeStep, kSmallPersistent, kLargePersistent, kNumPools };
  struct Block {
    uintptr_t addr;
    size_t size;
    PoolId pool;
    bool free = true;
    Block* prev = nullptr;  // neighbours inside the segment
    Block* next = nullptr;
  };
  struct BySizeThenAddress {
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->addr < b->addr;
    }
  };
  using FreeBlocks = std::set<Block*, BySizeThenAddress>;

  Block* new_segment(size_t bytes, PoolId pool);  // throws when the system has no memory
  void add_in_use(const Block* b, int64_t sign);

  SystemMemory system_;
  std::array<FreeBlocks, kNumPools> free_;
  std::unordered_map<uintptr_t, Block*> in_use_;  // handed-out blocks by address
  int64_t reserved_ = 0, system_allocs_ = 0;
  // The large step pool: bytes of its segments (now, and at the last step end), and bytes of its
  // blocks in use (now, and their peak since the last step end).
  int64_t step_segments_ = 0, step_segments_at_end_ = 0, step_in_use_ = 0, step_peak_ = 0;
};

}  // namespace hg::memory::detail
