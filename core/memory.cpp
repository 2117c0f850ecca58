// Caching allocator, tape arena and byte accounting (see memory.h for the policy).
#include "core/memory.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <vector>

#include "core/autograd.h"
#include "core/block_cache.h"
#include "core/debug_fill.h"

#ifdef HAARGRAD_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace hg::memory {
namespace {

constexpr size_t kAlign = 256;
size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

thread_local Category t_category = Category::activations;

// One block the arena carves allocations from.
struct Chunk {
  void* base = nullptr;
  size_t capacity = 0;
  Device device;
  Chunk(size_t bytes, Device d) : base(system_alloc(bytes, d)), capacity(bytes), device(d) {}
  ~Chunk() { system_free(base, device); }
};

struct DeviceState {
  explicit DeviceState(Device d) : cache(d) {}
  std::mutex mu;
  MemoryStats stats;
  detail::BlockCache cache;  // the caching allocator (core/block_cache.h)
  // tape arena
  std::vector<std::shared_ptr<Chunk>> chunks;
  // Blocks taken out of service while a tensor still used them. Kept (and counted as reserved)
  // so one can serve again once its tensors die: a caller that holds one tensor of each step
  // into the next (e.g. the last loss) then alternates between two blocks instead of making a
  // system allocation (and, on CUDA, a synchronising cudaFree) every step.
  std::vector<std::shared_ptr<Chunk>> retired;
  size_t chunk_index = 0, chunk_offset = 0, step_bytes = 0;
  bool step_done = false;

  void add_live(Category c, int64_t bytes) {
    auto i = static_cast<int>(c);
    stats.current[i] += bytes;
    stats.total_current += bytes;
    if (stats.current[i] > stats.peak[i]) stats.peak[i] = stats.current[i];
    if (stats.total_current > stats.total_peak) stats.total_peak = stats.total_current;
  }
  void add_reserved(int64_t bytes) {
    stats.reserved += bytes;
    if (stats.reserved > stats.reserved_peak) stats.reserved_peak = stats.reserved;
  }
};

// Never destroyed: tensors in other statics may be freed during exit, after this function's statics.
DeviceState& state(Device d) {
  static DeviceState* cpu = new DeviceState(Device::cpu);
  static DeviceState* cuda = new DeviceState(Device::cuda);
  return d == Device::cpu ? *cpu : *cuda;
}

// Start the arena over for a new step: keep blocks no live tensor uses, and when the last step
// overflowed into several blocks, replace them by one block of the step's high-water mark.
void arena_begin_step(DeviceState& s, Device device) {
  s.stats.arena_high_water = static_cast<int64_t>(s.step_bytes);
  bool all_free = true;
  size_t capacity = 0;
  for (auto& c : s.chunks) {
    all_free = all_free && c.use_count() == 1;
    capacity += c->capacity;
  }
  if (!all_free || s.chunks.size() > 1) {
    for (auto& c : s.chunks) s.retired.push_back(c);
    s.chunks.clear();
    size_t want = round_up(std::max(s.step_bytes, capacity), size_t(2) << 20);
    if (s.step_bytes > 0) {
      auto reusable = std::find_if(s.retired.begin(), s.retired.end(), [&](const auto& c) {
        return c.use_count() == 1 && c->capacity >= want;
      });
      if (reusable != s.retired.end()) {
        s.chunks.push_back(*reusable);
        s.retired.erase(reusable);
      }
    }
  }
  // Retired blocks no tensor uses any more go back to the system -- before a new block is taken,
  // so the device never holds the old blocks and the new one at the same time.
  for (auto it = s.retired.begin(); it != s.retired.end();) {
    if (it->use_count() == 1) {
      s.add_reserved(-static_cast<int64_t>((*it)->capacity));
      it = s.retired.erase(it);
    } else {
      ++it;
    }
  }
  if (s.chunks.empty() && s.step_bytes > 0) {
    const size_t want = round_up(std::max(s.step_bytes, capacity), size_t(2) << 20);
    s.chunks.push_back(std::make_shared<Chunk>(want, device));
    s.add_reserved(static_cast<int64_t>(want));
  }
  s.stats.arena_capacity = s.chunks.empty() ? 0 : static_cast<int64_t>(s.chunks[0]->capacity);
  s.chunk_index = 0;
  s.chunk_offset = 0;
  s.step_bytes = 0;
  s.step_done = false;
}

std::shared_ptr<void> arena_allocate(DeviceState& s, size_t bytes, Device device, Category cat) {
  if (s.step_done) arena_begin_step(s, device);
  while (s.chunk_index < s.chunks.size() &&
         s.chunk_offset + bytes > s.chunks[s.chunk_index]->capacity) {
    ++s.chunk_index;
    s.chunk_offset = 0;
  }
  if (s.chunk_index == s.chunks.size()) {  // first step, or a bigger one: grow
    size_t grow = std::max(round_up(bytes, size_t(2) << 20), size_t(64) << 20);
    s.chunks.push_back(std::make_shared<Chunk>(grow, device));
    s.add_reserved(static_cast<int64_t>(grow));
    s.chunk_offset = 0;
  }
  std::shared_ptr<Chunk> chunk = s.chunks[s.chunk_index];
  void* p = static_cast<char*>(chunk->base) + s.chunk_offset;
  s.chunk_offset += bytes;
  s.step_bytes += bytes;
  s.add_live(cat, static_cast<int64_t>(bytes));
  // The deleter keeps the block alive while this tensor lives and returns the bytes to the stats.
  return std::shared_ptr<void>(p, [chunk, bytes, device, cat](void*) {
    DeviceState& st = state(device);
    std::lock_guard<std::mutex> lock(st.mu);
    st.add_live(cat, -static_cast<int64_t>(bytes));
  });
}

std::shared_ptr<void> cache_allocate(DeviceState& s, size_t bytes, Device device, Category cat) {
  int64_t reserved = 0;
  void* p = s.cache.allocate(bytes, &reserved);
  s.add_reserved(reserved);
  s.add_live(cat, static_cast<int64_t>(bytes));
  return std::shared_ptr<void>(p, [bytes, device, cat](void* q) {
    DeviceState& st = state(device);
    std::lock_guard<std::mutex> lock(st.mu);
    st.add_live(cat, -static_cast<int64_t>(bytes));
    st.cache.free(q);
  });
}

// ---- debug fill (memory.h: set_debug_fill) ---------------------------------------------------
constexpr uint8_t kPoisonByte = 0xFF, kGuardByte = 0xA5;
std::atomic<bool> g_debug_fill[2] = {false, false};
std::atomic<int64_t> g_guard_violations{0};

void fill_bytes(void* p, uint8_t value, size_t n, Device device) {
  if (device == Device::cpu) {
    std::memset(p, value, n);
    return;
  }
#ifdef HAARGRAD_WITH_CUDA
  const cudaError_t err = cudaMemset(p, value, n);  // queued on the default stream, like the ops
  HG_CHECK(err == cudaSuccess, "debug fill: cudaMemset failed: ", cudaGetErrorString(err));
#endif
}

bool guard_intact(const void* p, Device device) {
  uint8_t host[kGuardBytes];
  if (device == Device::cpu) {
    std::memcpy(host, p, kGuardBytes);
  } else {
#ifdef HAARGRAD_WITH_CUDA
    // Ordered after every kernel queued before the free; no throw (called from a deleter).
    if (cudaMemcpy(host, p, kGuardBytes, cudaMemcpyDeviceToHost) != cudaSuccess) return false;
#endif
  }
  for (uint8_t b : host)
    if (b != kGuardByte) return false;
  return true;
}

std::shared_ptr<void> allocate_plain(size_t bytes, Device device);

// `bytes` of 0xFF followed by the guard bytes; the guard is checked when the last owner lets go.
std::shared_ptr<void> allocate_guarded(size_t bytes, Device device) {
  std::shared_ptr<void> block = allocate_plain(bytes + kGuardBytes, device);
  char* base = static_cast<char*>(block.get());
  fill_bytes(base, kPoisonByte, bytes, device);
  fill_bytes(base + bytes, kGuardByte, kGuardBytes, device);
  return std::shared_ptr<void>(base, [block, bytes, device](void* p) {
    if (!guard_intact(static_cast<char*>(p) + bytes, device)) ++g_guard_violations;
  });
}

}  // namespace

const char* hg_category_names[kNumCategories] = {"parameters", "gradients", "optimizer_state",
                                                 "activations", "workspace"};

CategoryScope::CategoryScope(Category c) : saved_(t_category) { t_category = c; }
CategoryScope::~CategoryScope() { t_category = saved_; }
Category current_category() { return t_category; }

void* system_alloc(size_t bytes, Device device) {
  DeviceState& s = state(device);
  void* p = nullptr;
  if (device == Device::cpu) {
    p = std::aligned_alloc(kAlign, round_up(std::max<size_t>(bytes, 1), kAlign));
    HG_CHECK(p != nullptr, "out of host memory: asked for ", bytes, " bytes");
  } else {
#ifdef HAARGRAD_WITH_CUDA
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // clear the sticky-free error state, then report
      size_t free_b = 0, total_b = 0;
      cudaMemGetInfo(&free_b, &total_b);
      throw Error(str("CUDA out of memory: asked for ", bytes, " bytes (", bytes >> 20,
                      " MiB), ", free_b, " bytes (", free_b >> 20, " MiB) free of ", total_b >> 20,
                      " MiB; try a smaller batch"));
    }
    HG_CHECK(err == cudaSuccess, "cudaMalloc(", bytes, ") failed: ", cudaGetErrorString(err));
#else
    throw Error("this haargrad was built without CUDA (HAARGRAD_CUDA=OFF): no cuda device");
#endif
  }
  ++s.stats.system_allocs;
  return p;
}

void system_free(void* p, Device device) {
  if (!p) return;
  if (device == Device::cpu) {
    std::free(p);
  } else {
#ifdef HAARGRAD_WITH_CUDA
    cudaFree(p);  // no throw: called from destructors
#endif
  }
}

std::shared_ptr<void> allocate(size_t bytes, Device device) {
  // The guard starts right after the bytes asked for, so even a one-element overrun is caught.
  if (g_debug_fill[static_cast<int>(device)]) return allocate_guarded(std::max<size_t>(bytes, 1), device);
  return allocate_plain(bytes, device);
}

void set_debug_fill(Device device, bool on) { g_debug_fill[static_cast<int>(device)] = on; }
bool debug_fill(Device device) { return g_debug_fill[static_cast<int>(device)]; }
int64_t guard_violations() { return g_guard_violations; }

namespace {
std::shared_ptr<void> allocate_plain(size_t bytes, Device device) {
  bytes = round_up(std::max<size_t>(bytes, 1), kAlign);
  DeviceState& s = state(device);
  std::lock_guard<std::mutex> lock(s.mu);
  Category cat = t_category;
  if (cat == Category::activations && autograd::is_grad_enabled())
    return arena_allocate(s, bytes, device, cat);
  try {
    return cache_allocate(s, bytes, device, cat);
  } catch (const Error&) {
    const size_t released = s.cache.release_free_segments();  // give cached memory back, retry once
    if (released == 0) throw;
    s.add_reserved(-static_cast<int64_t>(released));
    return cache_allocate(s, bytes, device, cat);
  }
}
}  // namespace

void arena_step_done(Device device) {
  DeviceState& s = state(device);
  std::lock_guard<std::mutex> lock(s.mu);
  s.step_done = true;
}

MemoryStats stats(Device device) {
  DeviceState& s = state(device);
  std::lock_guard<std::mutex> lock(s.mu);
  return s.stats;
}

void reset_peak(Device device) {
  DeviceState& s = state(device);
  std::lock_guard<std::mutex> lock(s.mu);
  s.stats.peak = s.stats.current;
  s.stats.total_peak = s.stats.total_current;
  s.stats.reserved_peak = s.stats.reserved;
}

void empty_cache(Device device) {
  DeviceState& s = state(device);
  std::lock_guard<std::mutex> lock(s.mu);
  s.add_reserved(-static_cast<int64_t>(s.cache.release_free_segments()));
}

void release_arena(Device device) {
  DeviceState& s = state(device);
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto& c : s.chunks) s.add_reserved(-static_cast<int64_t>(c->capacity));
  s.chunks.clear();  // like arena_begin_step: a block in use dies with its last tensor
  s.chunk_index = 0;
  s.chunk_offset = 0;
  s.step_bytes = 0;
  s.step_done = false;
  s.stats.arena_capacity = 0;
}

std::string format_stats(Device device) {
  MemoryStats st = stats(device);
  auto mib = [](int64_t b) { return static_cast<double>(b) / (1 << 20); };
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  os << "peak memory on " << device_name(device) << " (MiB):";
  for (int i = 0; i < kNumCategories; ++i)
    os << ' ' << hg_category_names[i] << ' ' << mib(st.peak[i]);
  os << "; total " << mib(st.total_peak) << ", reserved " << mib(st.reserved_peak);
  return os.str();
}

}  // namespace hg::memory

namespace hg {
const char* category_name(Category c) { return memory::hg_category_names[static_cast<int>(c)]; }
}  // namespace hg
