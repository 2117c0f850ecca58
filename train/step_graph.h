// One training step as a CUDA graph: the step's thousand-odd kernel launches captured once and
// replayed with one cudaGraphLaunch per step (issue 11; docs/autograd.md, "CUDA graphs").
//
// Why: the host queues a step's launches one by one (716 for ConvNeXt-T, 792 for WTConvNeXt-T in
// bf16: docs/perf-notes.md, twenty-first session) and anything that slows the training thread
// (nvJPEG's decode in the loader's GPU thread, docs/perf-notes.md, eighth session) shows up as GPU
// idle time. A replay is one launch.
//
// How a step is split: `eager` is the whole step as it runs without a graph; `prepare` is the host
// work every step needs (the optimizer's prepare_step: step counts, this step's learning rate and
// bias corrections uploaded to device memory); `queue` is the GPU work (forward, loss, backward,
// clipping, the optimizer's queue_step), so that prepare + queue = eager. The first `warmup`
// calls run `eager` in the graph's private memory pool (core/memory.h: memory::PrivatePool), which
// sizes the pool and creates gradients and optimizer state; the next call runs `prepare`, captures
// `queue` (cudaStreamBeginCapture on hg::cuda::stream()) and launches the graph; later calls run
// `prepare` and launch the graph.
//
// What makes a replay the same step: every address the captured kernels use stays fixed. The
// inputs are the caller's fixed tensors; parameters, gradients and optimizer state live as long as
// the model; the step's activations come from the private pool, which nothing else allocates
// from, and whose blocks the replay uses in the captured order. `addresses` (optional) names the
// device addresses `prepare` could move (the optimizer's queue_signature): a replay after they
// changed throws instead of updating stale memory.
//
// `prepare` allocates from the shared allocator as usual (not from the pool): what it allocates may
// outlive a replay without the replay writing over it.
//
// Values the step draws on the host (drop path's per-sample masks) go through host_drawn
// (core/host_drawn.h): the capture records the calls, and every launch draws and uploads them anew,
// from the same generator in the same order as an eager step.
//
// What the caller must keep out of `queue`: other per-step values passed as kernel arguments from
// the host (they would be frozen at their captured values: SGD's learning rate) and host waits. A
// capture that meets one fails with GraphCaptureError naming the CUDA error (the trainer then runs
// that step and the later ones op by op, with a warning). During a capture the allocator gives no
// segment back (memory::step_done does nothing), so the graph's blocks stay where they are; the
// warm-up steps size the pool, and where the captured step's requests pack otherwise (they lack
// the eager steps' host-drawn uploads) the allocator takes a segment during the capture
// (core/memory.cpp, system_alloc). CUDA only; one graph per StepGraph, used from one thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/host_drawn.h"
#include "core/memory.h"
#include "train/optimizer.h"

namespace hg::train {

/// A capture that failed (the step's GPU work did not run; `prepare` had run for it). The caller
/// may run `queue` eagerly for this step and launch later steps op by op.
class GraphCaptureError : public Error {
 public:
  using Error::Error;
};

struct StepParts {
  std::function<void()> eager;                          ///< the whole step, for the warm-up
  std::function<void()> prepare;                        ///< host work of every step (may be empty)
  std::function<void()> queue;                          ///< the GPU work, captured once
  std::function<std::vector<const void*>()> addresses;  ///< checked at every replay (may be empty)
};

/// The parts of a training step that ends in `opt`'s update (AdamW: opt.replayable()).
/// `forward_backward` is the step up to the update: zero_grad, forward, loss, backward and any
/// clipping; eager = forward_backward + opt.step(), prepare = opt.prepare_step(), queue =
/// forward_backward + opt.queue_step() (the update without autograd recording), addresses =
/// opt.queue_signature(). `opt` and what forward_backward refers to must outlive the parts.
StepParts optimizer_step_parts(Optimizer& opt, std::function<void()> forward_backward);

class StepGraph {
 public:
  /// `warmup` eager steps before the capture (at least 3: the allocator needs two or three steps
  /// to size its memory, core/block_cache.h). Throws hg::Error for a device other than cuda or a
  /// build without CUDA.
  static constexpr int kDefaultWarmup = 3;
  explicit StepGraph(Device device, int warmup = kDefaultWarmup);
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  /// One training step (see the file comment). Throws GraphCaptureError when the capture fails
  /// (the graph is then left uncaptured, its recorded draws and the step's tape cleared), hg::Error
  /// when `addresses` changed since the capture or on a CUDA error.
  void step(const StepParts& parts);

  bool captured() const;
  /// Nodes of the captured graph (kernels, copies, memsets); 0 before the capture.
  size_t nodes() const { return nodes_; }
  /// The device's memory statistics over the captured step. A replay allocates nothing, so
  /// memory::stats after it shows no activations; this is the step's live peak. The capture
  /// resets the device's peaks (memory::reset_peak) first.
  const MemoryStats& capture_memory() const { return capture_memory_; }

 private:
  void capture(const StepParts& parts);
  void launch();

  Device device_;
  int warmup_, calls_ = 0;
  std::shared_ptr<memory::PrivatePool> pool_;
  struct Graph;  // the CUDA graph and its executable instance
  std::unique_ptr<Graph> graph_;
  size_t nodes_ = 0;
  MemoryStats capture_memory_;
  std::vector<const void*> addresses_;  // parts.addresses() at the capture
  HostDrawnLog drawn_;                  // the captured step's host_drawn calls
};

}  // namespace hg::train
