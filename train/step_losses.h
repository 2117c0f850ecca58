// The training loss stays on the device between log points. Reading a step's loss on the host
// (loss.item()) waits for the GPU to finish that step's forward, so the host could never queue
// work ahead of the GPU. Instead each step's loss (a scalar on the step's device) is copied, in
// stream order, into slot k of a device buffer, and the buffer is read back (one copy, one wait)
// at each log point (every log_interval optimizer updates) and at the end of an epoch, into
// page-locked host memory (made once); the non-finite check happens then, naming the first step
// whose loss was not finite. Steps after it may have run (their updates are never saved: the
// trainer stops before any checkpoint is written).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace hg::train {

class StepLosses {
 public:
  /// Room for `capacity` >= 1 steps between reads, in a buffer on `device`.
  StepLosses(int64_t capacity, Device device);

  /// Queues the copy of `loss` (one f32 element on the buffer's device) as the loss
  /// of step `step` (0-based in its epoch) over `images` images. Throws hg::Error when the buffer
  /// is full (take() first), or for a loss that is not one f32 element on the buffer's device.
  void add(const Tensor& loss, int64_t step, int64_t images);
  int64_t pending() const { return static_cast<int64_t>(steps_.size()); }
  bool full() const { return pending() == capacity_; }

  struct Read {
    std::vector<double> losses;  ///< per pending step, in order
    std::vector<int64_t> steps, images;
  };
  /// The pending steps' losses (waits for their steps on the GPU), and empties the buffer.
  Read take();

 private:
  int64_t capacity_;
  Tensor buffer_;  // (capacity) f32
  Tensor host_;    // (capacity) f32 page-locked host copy (a GPU buffer_ only)
  std::vector<int64_t> steps_, images_;
};

}  // namespace hg::train
