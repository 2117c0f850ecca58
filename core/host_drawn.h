// Values drawn on the host for one training step and read by its GPU work (drop path's
// per-sample masks), made so that a CUDA graph of the step (train/step_graph.h) gets new ones at
// every replay, drawn from the same generator in the same order as an eager step would draw them.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor.h"

namespace hg {

/// Fills `values` (n numbers, already sized) with one step's draws. Called once per eager step,
/// and once per replay of a captured one: whatever it draws from must outlive the graph.
using DrawFn = std::function<void(std::vector<double>& values)>;

/// A tensor {n} of `dtype` (f32 or f64) on `device` holding draw's values. On the CPU a plain
/// tensor; on the GPU uploaded from page-locked memory (queued on hg::cuda::stream(), no host
/// wait). While a HostDrawnCapture lives on this thread (any device), the tensor is a buffer the
/// capture keeps, left unfilled: HostDrawnLog::refill() draws and uploads its values before each
/// launch. That buffer comes from the shared allocator's persistent pool, never from the
/// captured step's private pool (core/memory.h), whose blocks the graph's own kernels may write
/// after the upload.
Tensor host_drawn(int64_t n, DType dtype, Device device, const DrawFn& draw);

/// The host_drawn calls of one captured step, in the order they were made.
class HostDrawnLog {
 public:
  /// Draws every recorded call's values again, in the recorded order, and queues their upload
  /// into the buffers the captured kernels read (hg::cuda::stream()).
  void refill();
  size_t size() const { return entries_.size(); }

 private:
  friend Tensor host_drawn(int64_t, DType, Device, const DrawFn&);
  struct Entry {
    Tensor buffer;  // on the device, kept for the log's lifetime: its address is in the graph
    DrawFn draw;
  };
  std::vector<Entry> entries_;
};

/// Records this thread's host_drawn calls into `log` while it lives.
class HostDrawnCapture {
 public:
  explicit HostDrawnCapture(HostDrawnLog& log);
  ~HostDrawnCapture();
  HostDrawnCapture(const HostDrawnCapture&) = delete;
  HostDrawnCapture& operator=(const HostDrawnCapture&) = delete;

 private:
  HostDrawnLog* saved_;
};

}  // namespace hg
