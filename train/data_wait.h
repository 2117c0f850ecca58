// How long the training step waited for its data: the `waited for data` share that `train` logs
// each epoch (and TrainResult::data_wait_fraction).
//
// The loader's own figure (LoaderStats::wait_seconds, the time next() blocked) is the host's wait.
// On a GPU the host runs ahead of the device, and something must hold it back when the GPU is the
// limit: with decode: nvjpeg and the step as one CUDA graph that is the loader (its decoder thread
// waits for the GPU to release an output buffer), so next() blocked 91% of the time while the run
// trained at synthetic-data speed (fourteenth session). A wait holds the step up only while the
// GPU has nothing left to run. So on CUDA DataWait measures, with two timed events around each
// next(), the GPU's time from finishing the work queued before the call to reaching the point where
// the call returned: 0 when the GPU was busy throughout; it also includes the GPU work next()
// itself queues (the GPU transform's copies and crop kernel, ~0.4 ms a batch of 128 at 224 px). A
// pair is read once its events are done (queried at each begin(), never waited for: the host may
// run up to log_interval steps ahead), so the pairs in flight grow with the host's lead. On the CPU
// every host wait counts.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <vector>

#include "core/dtype.h"

namespace hg::train {

class DataWait {
 public:
  /// device: where the training step runs (cuda: the calling thread's stream, core/cuda_stream.h).
  /// Throws hg::Error for cuda in a build without CUDA.
  explicit DataWait(Device device);
  ~DataWait();
  DataWait(const DataWait&) = delete;
  DataWait& operator=(const DataWait&) = delete;

  /// Before the loader's next(): marks the work queued so far. Throws hg::Error on a CUDA error.
  void begin();
  /// After it: marks where the batch arrived. Throws hg::Error on a CUDA error.
  void end();
  /// Seconds counted over every begin() / end() pair so far. CUDA: waits for the pairs still in
  /// flight (a host wait: call it when a reading is wanted, e.g. at an epoch's end). Throws
  /// hg::Error on a CUDA error.
  double seconds();

 private:
  struct Pair;              // two timed CUDA events (data_wait.cpp)
  void harvest(bool wait);  // adds the finished pairs' times (all of them: wait)

  Device device_;
  std::vector<std::unique_ptr<Pair>> free_;    // CUDA: pairs to record next
  std::deque<std::unique_ptr<Pair>> pending_;  // recorded, not read yet (oldest first)
  std::unique_ptr<Pair> open_;                 // begin() recorded, end() not yet
  double seconds_ = 0;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace hg::train
