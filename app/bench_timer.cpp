// DeviceClock, step-time statistics and device-memory probes (see bench_timer.h).
#include "app/bench_timer.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "core/error.h"

#ifdef HAARGRAD_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/context.h"
#endif

namespace hg::app {

struct DeviceClock::Impl {
  Device device;
  std::vector<std::chrono::steady_clock::time_point> cpu_marks;
#ifdef HAARGRAD_WITH_CUDA
  std::vector<cudaEvent_t> events;
#endif
};

DeviceClock::DeviceClock(Device device, int capacity) : impl_(std::make_unique<Impl>()) {
  HG_CHECK(capacity >= 1, "DeviceClock: capacity must be >= 1, got ", capacity);
  impl_->device = device;
  impl_->cpu_marks.resize(static_cast<size_t>(capacity));
  if (device == Device::cuda) {
#ifdef HAARGRAD_WITH_CUDA
    impl_->events.resize(static_cast<size_t>(capacity), nullptr);
    for (cudaEvent_t& e : impl_->events) HG_CUDA_CHECK(cudaEventCreate(&e));
#else
    throw Error("DeviceClock: this haargrad was built without CUDA");
#endif
  }
}

DeviceClock::~DeviceClock() {
#ifdef HAARGRAD_WITH_CUDA
  for (cudaEvent_t e : impl_->events)
    if (e) HG_CUDA_CHECK_NOTHROW(cudaEventDestroy(e));
#endif
}

int DeviceClock::mark() {
  HG_CHECK(used_ < static_cast<int>(impl_->cpu_marks.size()), "DeviceClock: all ",
           impl_->cpu_marks.size(), " marks used (raise the capacity)");
  const auto i = static_cast<size_t>(used_);
  if (impl_->device == Device::cuda) {
#ifdef HAARGRAD_WITH_CUDA
    HG_CUDA_CHECK(cudaEventRecord(impl_->events[i], cuda::stream()));
#endif
  } else {
    impl_->cpu_marks[i] = std::chrono::steady_clock::now();
  }
  return used_++;
}

void DeviceClock::sync() {
#ifdef HAARGRAD_WITH_CUDA
  if (impl_->device == Device::cuda && used_ > 0)
    HG_CUDA_CHECK(cudaEventSynchronize(impl_->events[static_cast<size_t>(used_ - 1)]));
#endif
}

double DeviceClock::elapsed_ms(int a, int b) const {
  HG_CHECK(a >= 0 && b >= 0 && a < used_ && b < used_, "DeviceClock: marks ", a, " and ", b,
           " out of range (", used_, " recorded)");
  if (impl_->device == Device::cuda) {
#ifdef HAARGRAD_WITH_CUDA
    float ms = 0;
    HG_CUDA_CHECK(cudaEventElapsedTime(&ms, impl_->events[static_cast<size_t>(a)],
                                       impl_->events[static_cast<size_t>(b)]));
    return ms;
#endif
  }
  const auto d = impl_->cpu_marks[static_cast<size_t>(b)] - impl_->cpu_marks[static_cast<size_t>(a)];
  return std::chrono::duration<double, std::milli>(d).count();
}

TimingStats summarize(std::vector<double> ms) {
  HG_CHECK(!ms.empty(), "summarize: no step times");
  std::sort(ms.begin(), ms.end());
  TimingStats s;
  const size_t n = ms.size();
  s.count = static_cast<int>(n);
  s.median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  s.min = ms.front();
  s.max = ms.back();
  s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(n);
  return s;
}

void device_sync(Device device) {
#ifdef HAARGRAD_WITH_CUDA
  if (device == Device::cuda) cuda::synchronize();
#else
  (void)device;
#endif
}

std::optional<int64_t> device_used_bytes(Device device) {
#ifdef HAARGRAD_WITH_CUDA
  if (device == Device::cuda && cuda::available()) {
    size_t free_b = 0, total_b = 0;
    HG_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    return static_cast<int64_t>(total_b - free_b);
  }
#else
  (void)device;
#endif
  return std::nullopt;
}

bool device_available(Device device) {
  if (device == Device::cpu) return true;
#ifdef HAARGRAD_WITH_CUDA
  return cuda::available();
#else
  return false;
#endif
}

}  // namespace hg::app
