// The device allocator, byte accounting and the allocation trace recorder (see memory.h).
#include "core/memory.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <vector>

#include "core/alloc_trace.h"
#include "core/block_cache.h"
#include "core/debug_fill.h"
#include "core/round_up.h"

#ifdef HAARGRAD_WITH_CUDA
#include <cuda_runtime.h>

#include "core/cuda_stream.h"
#endif

namespace hg::memory {
namespace {

constexpr size_t kAlign = 256;

thread_local Category t_category = Category::activations;

struct DeviceState {
  explicit DeviceState(Device d)
      : cache(detail::SystemMemory{[d](size_t bytes) { return system_alloc(bytes, d); },
                                   [d](void* p) { system_free(p, d); }}) {}
  std::mutex mu;
  MemoryStats stats;
  detail::BlockCache cache;  // the caching allocator (core/block_cache.h)
  // The allocation trace being recorded (core/alloc_trace.h), when `tracing`. Ids grow across
  // recordings, so freeing a block of an earlier recording never reads as a free in this one.
  bool tracing = false;
  int64_t trace_next_id = 0, trace_first_id = 1;
  std::vector<AllocEvent> trace;

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
  // Records an allocation when tracing; returns its trace id (0: not traced).
  int64_t trace_alloc(size_t bytes, Category cat) {
    if (!tracing) return 0;
    AllocEvent e;
    e.kind = AllocEvent::Kind::alloc;
    e.id = ++trace_next_id;
    e.bytes = static_cast<int64_t>(bytes);
    e.category = cat;
    trace.push_back(e);
    return e.id;
  }
  void trace_free(int64_t id) {
    if (!tracing || id < trace_first_id) return;
    AllocEvent e;
    e.kind = AllocEvent::Kind::free;
    e.id = id;
    trace.push_back(e);
  }
};

// Never destroyed: tensors in other statics may be freed during exit, after this function's statics.
DeviceState& state(Device d) {
  static DeviceState* cpu = new DeviceState(Device::cpu);
  static DeviceState* cuda = new DeviceState(Device::cuda);
  return d == Device::cpu ? *cpu : *cuda;
}

}  // namespace

class PrivatePool {
 public:
  explicit PrivatePool(Device d)
      : device(d),
        cache(detail::SystemMemory{[d](size_t bytes) { return system_alloc(bytes, d); },
                                   [d](void* p) { system_free(p, d); }}) {}
  ~PrivatePool() {
    DeviceState& s = state(device);
    std::lock_guard<std::mutex> lock(s.mu);
    s.add_reserved(-cache.reserved());  // the cache's destructor gives the segments back
  }
  const Device device;
  detail::BlockCache cache;  // used under the device's mutex, like DeviceState::cache
};

namespace {

thread_local std::shared_ptr<PrivatePool> t_pool;  // PrivatePoolScope's pool on this thread, if any

// The cache this thread allocates from on `device`: its pool's, or the shared one.
detail::BlockCache& thread_cache(DeviceState& s, Device device) {
  return t_pool && t_pool->device == device ? t_pool->cache : s.cache;
}

// Whether this thread's stream is being captured into a CUDA graph (train/step_graph.h): then no
// segment may be given back (cudaFree is not allowed in a capture, and the graph's blocks must
// stay where they are).
bool capturing(Device device) {
#ifdef HAARGRAD_WITH_CUDA
  if (device != Device::cuda) return false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(cuda::stream(), &status) == cudaSuccess &&
         status != cudaStreamCaptureStatusNone;
#else
  (void)device;
  return false;
#endif
}

// `cache` is s.cache or the cache of `pool` (kept alive until the block is freed).
std::shared_ptr<void> cache_allocate(DeviceState& s, detail::BlockCache& cache,
                                     std::shared_ptr<PrivatePool> pool, size_t bytes, Device device,
                                     Category cat) {
  const int64_t reserved = cache.reserved();
  void* p = cache.allocate(bytes, cat);
  s.add_reserved(cache.reserved() - reserved);
  s.add_live(cat, static_cast<int64_t>(bytes));
  const int64_t id = s.trace_alloc(bytes, cat);
  return std::shared_ptr<void>(p, [bytes, device, cat, id, pool = std::move(pool)](void* q) {
    DeviceState& st = state(device);
    std::lock_guard<std::mutex> lock(st.mu);
    st.add_live(cat, -static_cast<int64_t>(bytes));
    st.trace_free(id);
    (pool ? pool->cache : st.cache).free(q);
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
  const cudaError_t err = cudaMemsetAsync(p, value, n, cuda::stream());  // queued like the ops
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

std::shared_ptr<PrivatePool> make_private_pool(Device device) {
  return std::make_shared<PrivatePool>(device);
}

PrivatePoolScope::PrivatePoolScope(std::shared_ptr<PrivatePool> pool) : saved_(std::move(t_pool)) {
  t_pool = std::move(pool);
}
PrivatePoolScope::~PrivatePoolScope() { t_pool = std::move(saved_); }

CategoryScope::CategoryScope(Category c) : saved_(t_category) { t_category = c; }
CategoryScope::~CategoryScope() { t_category = saved_; }
Category current_category() { return t_category; }

void* system_alloc(size_t bytes, Device device) {
  DeviceState& s = state(device);
  void* p = nullptr;
  if (device == Device::cpu) {
    p = std::aligned_alloc(kAlign, round_up(std::max<size_t>(bytes, 1), kAlign));
    HG_CHECK(p != nullptr, "out of host memory: asked for ", bytes, " bytes (", bytes >> 20,
             " MiB) at once; a tensor that large comes from the sizes: try a smaller img_size or "
             "batch_size (or a smaller model)");
  } else {
#ifdef HAARGRAD_WITH_CUDA
    // A segment taken while this thread's stream is being captured into a CUDA graph
    // (train/step_graph.h) is the pool's memory, not the graph's work: no segment is given back
    // during a capture (capturing(), above), so the graph's blocks stay put, and the call may pass
    // the capture's thread-local mode, which refuses cudaMalloc. Relaxed for this call only, as
    // PyTorch's caching allocator does. Without it, a capture whose requests fell into the pool's
    // free blocks otherwise than its warm-up steps' failed (the head's dropout, forty-sixth
    // session): best fit packs a different sequence of requests differently.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaError_t err = cudaThreadExchangeStreamCaptureMode(&mode);
    HG_CHECK(err == cudaSuccess, "cudaThreadExchangeStreamCaptureMode failed: ",
             cudaGetErrorString(err));
    err = cudaMalloc(&p, bytes);
    const cudaError_t restored = cudaThreadExchangeStreamCaptureMode(&mode);  // the caller's mode
    if (restored != cudaSuccess && err == cudaSuccess) cudaFree(p);
    HG_CHECK(restored == cudaSuccess, "cudaThreadExchangeStreamCaptureMode (restoring) failed: ",
             cudaGetErrorString(restored));
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
  const Category cat = t_category;
  detail::BlockCache& cache = thread_cache(s, device);
  std::shared_ptr<PrivatePool> pool = &cache == &s.cache ? nullptr : t_pool;
  try {
    return cache_allocate(s, cache, pool, bytes, device, cat);
  } catch (const Error&) {
    if (capturing(device)) throw;
    const size_t released = cache.release_free_segments();  // give cached memory back, retry once
    if (released == 0) throw;
    s.add_reserved(-static_cast<int64_t>(released));
    return cache_allocate(s, cache, pool, bytes, device, cat);
  }
}
}  // namespace

void step_done(Device device) {
  DeviceState& s = state(device);
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.tracing) s.trace.push_back(AllocEvent{AllocEvent::Kind::step_end});
  if (capturing(device)) return;  // the captured step keeps the segments its warm-up steps sized
  detail::BlockCache& cache = thread_cache(s, device);
  const int64_t reserved = cache.reserved();
  cache.step_done();
  s.add_reserved(cache.reserved() - reserved);
}

void start_trace(Device device) {
  DeviceState& s = state(device);
  std::lock_guard<std::mutex> lock(s.mu);
  HG_CHECK(!s.tracing, "memory::start_trace: an allocation trace is already being recorded on ",
           device_name(device));
  s.tracing = true;
  s.trace_first_id = s.trace_next_id + 1;
  s.trace.clear();
}

AllocTrace stop_trace(Device device) {
  DeviceState& s = state(device);
  std::lock_guard<std::mutex> lock(s.mu);
  AllocTrace t;
  t.events = std::move(s.trace);
  s.trace.clear();
  s.tracing = false;
  for (AllocEvent& e : t.events)  // numbered from 1 in every recording
    if (e.kind != AllocEvent::Kind::step_end) e.id -= s.trace_first_id - 1;
  return t;
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
