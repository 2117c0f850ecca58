// How long the training step waited for its data: the `waited for data` share that `train` logs
// each epoch (and TrainResult::data_wait_fraction).
//
// The loader's own figure (LoaderStats::wait_seconds, the time next() blocked) is the host's wait.
// On a GPU the host runs ahead of the device, and something must hold it back when the GPU is the
// limit: with decode: nvjpeg and the step as one CUDA graph that is the loader (its decoder thread
// waits for the GPU to release an output buffer), so next() blocked 91% of the time while the run
// trained at synthetic-data speed (fourteenth session). A wait held the step up only if the GPU ran
// out of queued work during it: DataWait counts a wait on CUDA only when the work queued before it
// had finished by its end. It counts such a wait in full (the GPU may have been busy for part of
// it), so the figure is an upper bound; on the CPU every wait counts.
#pragma once

#include <chrono>

#include "core/dtype.h"

namespace hg::train {

class DataWait {
 public:
  /// device: where the training step runs (cuda: the calling thread's stream, core/cuda_stream.h).
  explicit DataWait(Device device);
  ~DataWait();
  DataWait(const DataWait&) = delete;
  DataWait& operator=(const DataWait&) = delete;

  /// Before the loader's next(): marks the GPU work queued so far.
  void begin();
  /// After it: the seconds since begin() to count as waiting for data, >= 0; 0 on CUDA when the
  /// work marked by begin() was still running. Throws hg::Error on a CUDA error.
  double end();

 private:
  Device device_;
  void* marker_ = nullptr;  // cudaEvent_t on CUDA
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace hg::train
