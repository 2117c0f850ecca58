// Device memory for haargrad: one allocator per device for everything (parameters, gradients,
// optimizer state, activations, workspace), and byte accounting per device and per category.
//
// The allocator (core/block_cache.h) carves best-fit blocks out of segments taken from the system
// (cudaMalloc / aligned_alloc), splits and merges them, and keeps them for the next request, so a
// training step's activations, freed during its backward, serve the backward's own allocations
// (activation gradients, temporaries). Parameters, gradients and optimizer state get segments of
// their own (they live as long as the model), and at the end of a step that had to take memory from
// the system (step_done, called by autograd::backward) the step's free segments become one. The
// first two or three steps size the memory; from then on a step makes no system allocation and the
// bytes held from the system stay within 10% of the live peak at the GPU benchmark's sizes
// (measured on recorded traces: core/alloc_trace.h, `haargrad alloc-trace`,
// tests/train/step_memory_test.cpp).
//
// The category of an allocation is the innermost CategoryScope on this thread (default:
// activations). Statistics count live bytes (current, peak) per category, plus bytes reserved from
// the system and the number of system allocations, per device.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/dtype.h"

namespace hg {

enum class Category : uint8_t { parameters, gradients, optimizer_state, activations, workspace };
inline constexpr int kNumCategories = 5;
const char* category_name(Category c);

/// Byte counts of one device. All values in bytes except system_allocs (a count).
struct MemoryStats {
  std::array<int64_t, kNumCategories> current{};  ///< live bytes per category
  std::array<int64_t, kNumCategories> peak{};     ///< max of current per category since reset_peak
  int64_t total_current = 0;   ///< live bytes, all categories
  int64_t total_peak = 0;      ///< max of total_current since reset_peak
  int64_t reserved = 0;        ///< bytes held from the system (all segments, in use or cached)
  int64_t reserved_peak = 0;   ///< max of reserved since reset_peak
  int64_t system_allocs = 0;   ///< number of malloc / cudaMalloc calls since process start
};

namespace memory {

/// Sets the category of allocations made on this thread while it lives.
class CategoryScope {
 public:
  explicit CategoryScope(Category c);
  ~CategoryScope();
  CategoryScope(const CategoryScope&) = delete;
  CategoryScope& operator=(const CategoryScope&) = delete;

 private:
  Category saved_;
};
Category current_category();

/// A private pool of memory on one device, for a CUDA graph (train/step_graph.h): the blocks a
/// captured step uses must not go to anything else between its replays. While a PrivatePoolScope
/// for it lives on a thread, that thread's allocations on the pool's device come from the pool
/// instead of the shared allocator, and step_done() sizes the pool (as core/block_cache.h says). A
/// block goes back to the pool it came from, whichever thread frees it; the pool's memory goes back
/// to the system when the last owner of the pool and of its blocks is gone. Counted in the device's
/// stats like the shared allocator's memory.
class PrivatePool;
std::shared_ptr<PrivatePool> make_private_pool(Device device);

/// Routes this thread's allocations on the pool's device to `pool` while it lives.
class PrivatePoolScope {
 public:
  explicit PrivatePoolScope(std::shared_ptr<PrivatePool> pool);
  ~PrivatePoolScope();
  PrivatePoolScope(const PrivatePoolScope&) = delete;
  PrivatePoolScope& operator=(const PrivatePoolScope&) = delete;

 private:
  std::shared_ptr<PrivatePool> saved_;
};

/// Allocates `bytes` (aligned to 256) on `device` in the current category; the memory goes back to
/// the allocator when the last owner drops the pointer. Throws hg::Error on out-of-memory, naming
/// the bytes asked for and the bytes free.
std::shared_ptr<void> allocate(size_t bytes, Device device);

/// Marks the end of a training step on `device` (autograd::backward calls it when the backward is
/// done): the allocator may rearrange its free memory for the next step (core/block_cache.h).
void step_done(Device device);

MemoryStats stats(Device device);
void reset_peak(Device device);
/// Returns every cached segment with no block in use to the system; the next steps size the memory
/// again. For callers that switch between workloads of very different sizes (`haargrad bench` rows,
/// an out-of-memory retry at a smaller batch).
void empty_cache(Device device);
/// A multi-line human-readable table of the stats (MiB).
std::string format_stats(Device device);

/// Raw system allocation under the allocator; counted in stats().system_allocs.
void* system_alloc(size_t bytes, Device device);
void system_free(void* p, Device device);

}  // namespace memory
}  // namespace hg
