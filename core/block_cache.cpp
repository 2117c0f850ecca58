// BlockCache: best-fit blocks carved from segments, split on allocation, merged on free (see
// block_cache.h for the policy).
#include "core/block_cache.h"

#include "core/memory.h"

namespace hg::memory::detail {
namespace {
constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kSmallRequest = 1 * kMiB;    // up to this: the small pool
constexpr size_t kSmallSegment = 2 * kMiB;
constexpr size_t kMidRequest = 10 * kMiB;     // up to this: 20 MiB segments
constexpr size_t kMidSegment = 20 * kMiB;
constexpr size_t kLargeRound = 2 * kMiB;      // larger: the request rounded up to 2 MiB
constexpr size_t kMinSmallSplit = 256;        // smallest remainder split off a small block
constexpr size_t kMinLargeSplit = 1 * kMiB;   // ... off a large block
}  // namespace

void* BlockCache::allocate(size_t bytes, int64_t* reserved_delta) {
  const bool small = bytes <= kSmallRequest;
  Pool& free_pool = pool(small);
  Block key{nullptr, bytes, small};
  auto it = free_pool.lower_bound(&key);  // the smallest free block of at least `bytes`
  Block* b = nullptr;
  if (it != free_pool.end()) {
    b = *it;
    free_pool.erase(it);
  } else {
    const size_t seg = small ? kSmallSegment
                       : bytes <= kMidRequest ? kMidSegment
                                              : (bytes + kLargeRound - 1) / kLargeRound * kLargeRound;
    b = new Block{static_cast<char*>(system_alloc(seg, device_)), seg, small};
    *reserved_delta += static_cast<int64_t>(seg);
  }
  const size_t rest = b->size - bytes;
  if (rest >= (small ? kMinSmallSplit : kMinLargeSplit)) {
    Block* r = new Block{b->ptr + bytes, rest, small};
    r->prev = b;
    r->next = b->next;
    if (b->next != nullptr) b->next->prev = r;
    b->next = r;
    b->size = bytes;
    free_pool.insert(r);
  }
  b->free = false;
  in_use_.emplace(b->ptr, b);
  return b->ptr;
}

void BlockCache::free(void* p) {
  auto it = in_use_.find(p);
  if (it == in_use_.end()) return;  // not ours: nothing to do (never happens through memory.cpp)
  Block* b = it->second;
  in_use_.erase(it);
  Pool& free_pool = pool(b->small);
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

size_t BlockCache::release_free_segments() {
  size_t released = 0;
  for (Pool* free_pool : {&small_, &large_}) {
    for (auto it = free_pool->begin(); it != free_pool->end();) {
      Block* b = *it;
      if (b->prev == nullptr && b->next == nullptr) {  // the whole segment is one free block
        system_free(b->ptr, device_);
        released += b->size;
        delete b;
        it = free_pool->erase(it);
      } else {
        ++it;
      }
    }
  }
  return released;
}

}  // namespace hg::memory::detail
