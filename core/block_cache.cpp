// BlockCache: best-fit blocks carved from segments, split on allocation, merged on free, and the
// step pool's segments made one at a step's end (see block_cache.h for the policy).
#include "core/block_cache.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/round_up.h"

namespace hg::memory::detail {
namespace {
constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kSmallRequest = 1 * kMiB;  // up to this: a small pool
constexpr size_t kSmallSegment = 2 * kMiB;
constexpr size_t kMidRequest = 10 * kMiB;  // up to this: 20 MiB segments
constexpr size_t kMidSegment = 20 * kMiB;
constexpr size_t kLargeRound = 2 * kMiB;     // larger: the request rounded up to 2 MiB
constexpr size_t kMinSmallSplit = 256;       // smallest remainder split off a small block
constexpr size_t kMinLargeSplit = 1 * kMiB;  // ... off a large block

}  // namespace

BlockCache::~BlockCache() {
  std::vector<Block*> all;
  for (const FreeBlocks& f : free_) all.insert(all.end(), f.begin(), f.end());
  for (const auto& [addr, b] : in_use_) all.push_back(b);
  for (Block* b : all)
    if (b->prev == nullptr) system_.free(reinterpret_cast<void*>(b->addr));  // a segment's start
  for (Block* b : all) delete b;
}

size_t BlockCache::free_blocks() const {
  size_t n = 0;
  for (const FreeBlocks& f : free_) n += f.size();
  return n;
}

BlockCache::Block* BlockCache::new_segment(size_t bytes, PoolId pool) {
  Block* b = new Block{reinterpret_cast<uintptr_t>(system_.alloc(bytes)), bytes, pool};
  reserved_ += static_cast<int64_t>(bytes);
  ++system_allocs_;
  if (pool == kLargeStep) step_segments_ += static_cast<int64_t>(bytes);
  return b;
}

void BlockCache::add_in_use(const Block* b, int64_t sign) {
  if (b->pool != kLargeStep) return;
  step_in_use_ += sign * static_cast<int64_t>(b->size);
  if (step_in_use_ > step_peak_) step_peak_ = step_in_use_;
}

void* BlockCache::allocate(size_t bytes, Category category) {
  const bool small = bytes <= kSmallRequest;
  const bool persistent = category == Category::parameters || category == Category::gradients ||
                          category == Category::optimizer_state;
  const PoolId pool = persistent ? (small ? kSmallPersistent : kLargePersistent)
                                 : (small ? kSmallStep : kLargeStep);
  FreeBlocks& free_pool = free_[pool];
  Block key{0, bytes, pool};
  auto it = free_pool.lower_bound(&key);  // the smallest free block of at least `bytes`
  Block* b = nullptr;
  if (it != free_pool.end()) {
    b = *it;
    free_pool.erase(it);
  } else {
    b = new_segment(small                  ? kSmallSegment
                    : bytes <= kMidRequest ? kMidSegment
                                           : round_up(bytes, kLargeRound),
                    pool);
  }
  const size_t rest = b->size - bytes;
  if (rest >= (small ? kMinSmallSplit : kMinLargeSplit)) {
    Block* r = new Block{b->addr + bytes, rest, pool};
    r->prev = b;
    r->next = b->next;
    if (b->next != nullptr) b->next->prev = r;
    b->next = r;
    b->size = bytes;
    free_pool.insert(r);
  }
  b->free = false;
  in_use_.emplace(b->addr, b);
  add_in_use(b, +1);
  return reinterpret_cast<void*>(b->addr);
}

void BlockCache::free(void* p) {
  auto it = in_use_.find(reinterpret_cast<uintptr_t>(p));
  if (it == in_use_.end()) return;  // not ours: nothing to do (never happens through memory.cpp)
  Block* b = it->second;
  in_use_.erase(it);
  add_in_use(b, -1);
  FreeBlocks& free_pool = free_[b->pool];
  b->free = true;
  if (b->prev != nullptr && b->prev->free) {  // merge into the free block before
    Block* a = b->prev;
    free_pool.erase(a);  // before its size (the set's key) changes
    a->size += b->size;
    a->next = b->next;
    if (b->next != nullptr) b->next->prev = a;
    delete b;
    b = a;
  }
  if (b->next != nullptr && b->next->free) {  // absorb the free block after
    Block* c = b->next;
    free_pool.erase(c);
    b->size += c->size;
    b->next = c->next;
    if (c->next != nullptr) c->next->prev = b;
    delete c;
  }
  free_pool.insert(b);
}

void BlockCache::step_done() {
  const int64_t start = step_segments_at_end_;  // the pool's bytes when the step began
  if (step_segments_ > start) {                 // the step took segments: make them one
    // Enough for the step's live peak (a perfect packing); when even that was there at the start
    // and the step still needed more, half of what it took more: the size approaches from below
    // what the step needs in one segment, which is less than what it needed in several.
    const int64_t target =
        start >= step_peak_ ? start + std::max<int64_t>((step_segments_ - start) / 2, kLargeRound)
                            : step_peak_;
    FreeBlocks& free_pool = free_[kLargeStep];
    for (auto it = free_pool.begin(); it != free_pool.end();) {
      Block* b = *it;
      if (b->prev == nullptr && b->next == nullptr) {  // a whole segment, free
        system_.free(reinterpret_cast<void*>(b->addr));
        reserved_ -= static_cast<int64_t>(b->size);
        step_segments_ -= static_cast<int64_t>(b->size);
        delete b;
        it = free_pool.erase(it);
      } else {
        ++it;
      }
    }
    if (target > step_segments_) {
      try {
        free_pool.insert(new_segment(
            round_up(static_cast<size_t>(target - step_segments_), kLargeRound), kLargeStep));
      } catch (const Error&) {  // no memory now: the next step takes segments as it needs them
      }
    }
  }
  step_segments_at_end_ = step_segments_;
  step_peak_ = step_in_use_;
}

size_t BlockCache::release_free_segments() {
  size_t released = 0;
  for (FreeBlocks& free_pool : free_) {
    for (auto it = free_pool.begin(); it != free_pool.end();) {
      Block* b = *it;
      if (b->prev == nullptr && b->next == nullptr) {  // the whole segment is one free block
        system_.free(reinterpret_cast<void*>(b->addr));
        released += b->size;
        if (b->pool == kLargeStep) step_segments_ -= static_cast<int64_t>(b->size);
        delete b;
        it = free_pool.erase(it);
      } else {
        ++it;
      }
    }
  }
  reserved_ -= static_cast<int64_t>(released);
  // What is left is the step pool's size from here on: a smaller step is not a reason to grow.
  step_segments_at_end_ = step_segments_;
  step_peak_ = step_in_use_;
  return released;
}

}  // namespace hg::memory::detail
