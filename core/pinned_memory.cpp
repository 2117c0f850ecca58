// Pinned host pool: exact-size free lists whose blocks carry a CUDA event (see pinned_memory.h).
#include "core/pinned_memory.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "core/error.h"
#include "core/memory.h"
#include "core/round_up.h"

#ifdef HAARGRAD_WITH_CUDA
#include <cuda_runtime.h>

#include "core/cuda_stream.h"
#endif

namespace hg::memory {

#ifdef HAARGRAD_WITH_CUDA
namespace {

constexpr size_t kRound = 256;  // block sizes are multiples of this

struct Block {
  size_t bytes = 0;
  cudaEvent_t last_use = nullptr;  // recorded after each queued read of the block
  bool used_by_gpu = false;        // last_use has been recorded at least once
  bool in_use = false;             // handed out
};

struct Pool {
  std::mutex mu;
  std::map<const char*, Block> blocks;  // base address -> block, for is_pinned on any inner pointer
  PinnedStats stats;

  // The block containing p, or blocks.end().
  std::map<const char*, Block>::iterator find(const void* p) {
    const char* c = static_cast<const char*>(p);
    auto it = blocks.upper_bound(c);
    if (it == blocks.begin()) return blocks.end();
    --it;
    return c < it->first + it->second.bytes ? it : blocks.end();
  }
  // The smallest cached block of `bytes` to twice that whose queued reads are done (marked in
  // use), or blocks.end(). Not only exact sizes: batches of GPU-bound crops differ in bytes from
  // batch to batch, and exact sizes made every batch a new cudaHostAlloc and the pool grow without
  // end.
  std::map<const char*, Block>::iterator reusable(size_t bytes) {
    auto best = blocks.end();
    for (auto it = blocks.begin(); it != blocks.end(); ++it) {
      const Block& b = it->second;
      if (b.in_use || b.bytes < bytes || b.bytes > 2 * bytes) continue;
      if (best != blocks.end() && best->second.bytes <= b.bytes) continue;
      if (b.used_by_gpu) {
        const cudaError_t err = cudaEventQuery(b.last_use);
        if (err == cudaErrorNotReady) continue;
        HG_CHECK(err == cudaSuccess,
                 "pinned memory: cudaEventQuery failed: ", cudaGetErrorString(err));
      }
      best = it;
    }
    if (best != blocks.end()) best->second.in_use = true;
    return best;
  }
};

// Never destroyed: blocks may be freed by static destructors after the CUDA runtime is gone.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

bool gpu_usable() {
  static const bool usable = [] {
    int n = 0;
    const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    (void)cudaGetLastError();  // a missing driver must not leave a sticky error behind
    return ok;
  }();
  return usable;
}

}  // namespace

std::shared_ptr<void> allocate_pinned(size_t bytes) {
  if (!gpu_usable()) return allocate(bytes, Device::cpu);
  bytes = round_up(std::max<size_t>(bytes, 1), kRound);
  Pool& P = pool();
  std::unique_lock<std::mutex> lock(P.mu);
  void* p = nullptr;
  if (const auto it = P.reusable(bytes); it != P.blocks.end()) {
    p = const_cast<char*>(it->first);
    bytes = it->second.bytes;
  } else {
    // An eighth more than asked, so that the next batches' slightly larger requests reuse it.
    bytes = round_up(bytes + bytes / 8, kRound);
    // Page-locking is slow (milliseconds for a large batch): let other workers go on meanwhile.
    lock.unlock();
    cudaError_t err = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
    HG_CHECK(err == cudaSuccess, "pinned memory: cudaHostAlloc of ", bytes,
             " bytes failed: ", cudaGetErrorString(err));
    Block b;
    b.bytes = bytes;
    b.in_use = true;
    err = cudaEventCreateWithFlags(&b.last_use, cudaEventDisableTiming);
    if (err != cudaSuccess) {
      cudaFreeHost(p);
      throw Error(str("pinned memory: cudaEventCreate failed: ", cudaGetErrorString(err)));
    }
    lock.lock();
    P.blocks.emplace(static_cast<const char*>(p), b);
    P.stats.reserved += static_cast<int64_t>(bytes);
    ++P.stats.system_allocs;
  }
  P.stats.live += static_cast<int64_t>(bytes);
  return std::shared_ptr<void>(p, [bytes](void* q) {
    Pool& P = pool();
    std::lock_guard<std::mutex> lock(P.mu);
    P.blocks[static_cast<const char*>(q)].in_use = false;
    P.stats.live -= static_cast<int64_t>(bytes);
  });
}

bool is_pinned(const void* p) {
  Pool& P = pool();
  std::lock_guard<std::mutex> lock(P.mu);
  auto it = P.find(p);
  return it != P.blocks.end() && it->second.in_use;
}

void record_pinned_use(const void* p) {
  Pool& P = pool();
  std::lock_guard<std::mutex> lock(P.mu);
  auto it = P.find(p);
  if (it == P.blocks.end()) return;
  const cudaError_t err = cudaEventRecord(it->second.last_use, cuda::stream());
  HG_CHECK(err == cudaSuccess, "pinned memory: cudaEventRecord failed: ", cudaGetErrorString(err));
  it->second.used_by_gpu = true;
}

PinnedStats pinned_stats() {
  Pool& P = pool();
  std::lock_guard<std::mutex> lock(P.mu);
  return P.stats;
}

#else  // built without CUDA: ordinary host memory, never pinned

std::shared_ptr<void> allocate_pinned(size_t bytes) { return allocate(bytes, Device::cpu); }
bool is_pinned(const void*) { return false; }
void record_pinned_use(const void*) {}
PinnedStats pinned_stats() { return {}; }

#endif

}  // namespace hg::memory
