// Wall-clock intervals on the host, for logs and throughput figures (GPU work is timed with CUDA
// events, app/bench_timer.h).
#pragma once

#include <chrono>

namespace hg {

/// Seconds of steady (monotonic) time since t0, a std::chrono::steady_clock::now() reading.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace hg
