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
// itself queues (the GPU transform's copies and crop kernel, ~0.4 ms a batch of 128 at 224 px).
// A pair is read when its slot in a ring of 8 comes round again: that read waits for its events,
// which returns at once unless the host runs more than 8 steps ahead of the GPU (then it holds the
// host there; a graphed step may otherwise run log_interval steps ahead). On the CPU every host
// wait counts.
#pragma once

#include <chrono>
#include <vector>

#include "core/dtype.h"

namespace hg::train {

class DataWait {
 public:
  /// device: where the training step runs (cuda: the calling thread's stream, core/cuda_stream.h).
  /// Throws hg::Error on a CUDA error, and for cuda in a build without CUDA.
  explicit DataWait(Device device);
  ~DataWait();
  DataWait(const DataWait&) = delete;
  DataWait& operator=(const DataWait&) = delete;

  /// Before the loader's next(): marks the work queued so far. Throws hg::Error on a CUDA error.
  void begin();
  /// After it: marks where the batch arrived. Throws hg::Error on a CUDA error.
  void end();
  /// Seconds counted over every begin() / end() pair so far (CUDA: waits for the last pairs'
  /// events, a host wait: call it when a reading is wanted, e.g. at an epoch's end).
  double seconds();

 private:
  void harvest(size_t pair);  // adds a recorded pair's time (waits for its events)
  void release();             // destroys the events made so far

  std::vector<void*> marks_;  // CUDA: cudaEvent_t pairs (begin, end) in a ring
  std::vector<bool> pending_;
  size_t next_ = 0;
  double seconds_ = 0;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace hg::train
