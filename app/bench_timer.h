// Timing and device-memory probes for `haargrad bench`: a clock that timestamps points on the
// device's own timeline (CUDA events on the GPU, std::chrono on the CPU), order statistics of step
// times, and cudaMemGetInfo. No CUDA types leak out of this header, so app/*.cpp stays portable.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/dtype.h"

namespace hg::app {

/// Timestamps ("marks") on `device`'s timeline. On the GPU a mark is a cudaEvent recorded on the
/// default stream (the stream every haargrad kernel runs on), so it does not stall the host: marks
/// are read after one synchronisation at the end. On the CPU a mark is steady_clock::now().
/// All events are created up front (capacity marks), so mark() never allocates on the hot path.
class DeviceClock {
 public:
  /// Throws hg::Error when capacity < 1, or on a CUDA error.
  DeviceClock(Device device, int capacity);
  ~DeviceClock();
  DeviceClock(const DeviceClock&) = delete;
  DeviceClock& operator=(const DeviceClock&) = delete;

  /// Records the next mark; returns its index. Throws hg::Error when all `capacity` are used.
  int mark();
  /// Waits for the device to reach every mark (cudaEventSynchronize on the last one).
  void sync();
  /// Milliseconds from mark a to mark b; call sync() first. Throws hg::Error on bad indices.
  double elapsed_ms(int a, int b) const;
  /// Forgets all marks (the events are reused).
  void reset() { used_ = 0; }
  int used() const { return used_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int used_ = 0;
};

/// Order statistics of per-step times in ms.
struct TimingStats {
  double median = 0, min = 0, max = 0, mean = 0;
  int count = 0;
};
/// Median (mean of the middle two for an even count), min, max and mean. Throws on an empty list.
TimingStats summarize(std::vector<double> ms);

/// Blocks until queued work on `device` is done (no-op on the CPU).
void device_sync(Device device);
/// Bytes in use on the current CUDA device according to the driver (total - free from
/// cudaMemGetInfo: every process and context, cuDNN/cuBLAS workspaces included). nullopt on the
/// CPU or without a GPU.
std::optional<int64_t> device_used_bytes(Device device);
/// True when `device` can be used: always for the CPU; a present GPU for CUDA.
bool device_available(Device device);

}  // namespace hg::app
