// Values drawn on the host for one training step and read by its GPU work (drop path's
// per-sample masks), made so that a CUDA graph of the step (train/step_graph.h) gets new ones at
// every replay, drawn from the same generator in the same order as an eager step would draw them.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
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

/// The sizes of this thread's host_drawn calls (n and dtype, in call order) while it lives,
/// recorded in an eager step (train/step_graph.cpp: the last warm-up step before a capture).
class HostDrawnSizes {
 public:
  HostDrawnSizes();
  ~HostDrawnSizes();
  HostDrawnSizes(const HostDrawnSizes&) = delete;
  HostDrawnSizes& operator=(const HostDrawnSizes&) = delete;
  const std::vector<std::pair<int64_t, DType>>& calls() const { return calls_; }

 private:
  friend Tensor host_drawn(int64_t, DType, Device, const DrawFn&);
  std::vector<std::pair<int64_t, DType>> calls_;
  HostDrawnSizes* saved_;
};

/// Takes a buffer of each of `calls`' sizes from the shared allocator's persistent pool, as a
/// capture's host_drawn calls do, and gives them back: a capture makes no system allocation (CUDA
/// refuses one while a stream captures), so the blocks its host_drawn calls will ask for must be
/// free in the pool before it starts. The same requests in the same order find them again (best
/// fit, core/block_cache.h). Without it a capture whose masks outgrew the room left in the
/// parameters' segments failed (the head's dropout, B x C numbers a step).
void reserve_host_drawn(const std::vector<std::pair<int64_t, DType>>& calls, Device device);

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
