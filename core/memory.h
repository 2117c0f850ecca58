// Device memory for haargrad: a caching allocator per device, the tape arena for activations, and
// byte accounting per device and per category.
//
// Where an allocation goes:
//   * Category::activations while grad mode is on (a training step's forward is being recorded):
//     the device's tape arena, a bump allocator over one block. The tape resets it when the step's
//     backward is done. After the first step the block is sized to that step's high-water mark, so a
//     steady-state step makes no system allocation (cudaMalloc / malloc).
//   * everything else (parameters, gradients, optimizer state, workspace, activations in no-grad
//     mode, activation gradients during backward): the caching allocator (core/block_cache.h), which
//     carves best-fit blocks out of cached segments, splitting and merging them, so repeated steps
//     make no system allocation and the bytes held stay close to the live peak.
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
  int64_t reserved = 0;        ///< bytes held from the system (cached blocks + arena blocks)
  int64_t reserved_peak = 0;   ///< max of reserved since reset_peak
  int64_t system_allocs = 0;   ///< number of malloc / cudaMalloc calls since process start
  int64_t arena_capacity = 0;  ///< bytes of the tape arena's blocks
  int64_t arena_high_water = 0;///< bytes the last completed step took from the arena
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

/// Allocates `bytes` (aligned to 256) on `device` in the current category; the memory goes back to
/// its allocator (arena or cache) when the last owner drops the pointer. Throws hg::Error on
/// out-of-memory, naming the bytes asked for and the bytes free.
std::shared_ptr<void> allocate(size_t bytes, Device device);

/// Marks the device's tape arena as done with the current step: the next arena allocation starts
/// from its beginning again (blocks still referenced by live tensors are retired, never reused).
void arena_step_done(Device device);

MemoryStats stats(Device device);
void reset_peak(Device device);
/// Returns every cached segment with no block in use to the system. The arena keeps its block.
void empty_cache(Device device);
/// Gives the tape arena's blocks back to the system (a block still used by a live tensor is
/// retired and freed with its last tensor); the next recorded step starts a fresh arena sized by
/// that step. For callers that switch between workloads of very different sizes (`haargrad bench`
/// rows, an out-of-memory retry at a smaller batch). Call it between steps, with the tape empty.
void release_arena(Device device);
/// A multi-line human-readable table of the stats (MiB).
std::string format_stats(Device device);

/// Raw system allocation used by both allocators; counted in stats().system_allocs.
void* system_alloc(size_t bytes, Device device);
void system_free(void* p, Device device);

}  // namespace memory
}  // namespace hg
