// One training step as a CUDA graph (see step_graph.h).
#include "train/step_graph.h"

#include <string>

#include "core/autograd.h"
#include "core/error.h"
#include "core/host_drawn.h"

#ifdef HAARGRAD_WITH_CUDA
#include <cuda_runtime.h>

#include <mutex>
#include <shared_mutex>

#include "core/cuda_stream.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/context.h"
#endif

namespace hg::train {

StepParts optimizer_step_parts(Optimizer& opt, std::function<void()> forward_backward) {
  auto update = [&opt, forward_backward](bool queue_only) {
    forward_backward();
    autograd::NoGradGuard no_grad;  // like torch.optim: the update is not recorded
    if (queue_only)
      opt.queue_step();
    else
      opt.step();
  };
  return StepParts{[update] { update(false); }, [&opt] { opt.prepare_step(); },
                   [update] { update(true); }, [&opt] { return opt.queue_signature(); }};
}

#ifdef HAARGRAD_WITH_CUDA

struct StepGraph::Graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Graph() {  // no throw: errors here leave nothing to recover
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

StepGraph::StepGraph(Device device, int warmup)
    : device_(device), warmup_(warmup), pool_(memory::make_private_pool(device)) {
  HG_CHECK(device == Device::cuda, "a CUDA graph of the training step needs device cuda, got ",
           device_name(device));
  HG_CHECK(
      warmup >= 3,
      "StepGraph: warmup must be >= 3 (the allocator sizes its memory in the first steps), got ",
      warmup);
}

StepGraph::~StepGraph() = default;

bool StepGraph::captured() const { return graph_ && graph_->exec; }

void StepGraph::step(const StepParts& parts) {
  if (calls_ < warmup_) {
    ++calls_;
    memory::PrivatePoolScope scope(pool_);
    parts.eager();
    return;
  }
  if (parts.prepare) parts.prepare();
  if (!captured()) {
    memory::PrivatePoolScope scope(pool_);  // every allocation of the captured work
    capture(parts);
  } else if (parts.addresses) {
    HG_CHECK(parts.addresses() == addresses_,
             "CUDA graph of the training step: the optimizer's tensors moved since the step was "
             "captured "
             "(a parameter gained or lost its gradient?); set cuda_graph: false to run such steps "
             "eagerly");
  }
  drawn_.refill();  // this step's host-drawn values (drop path's masks), into the graph's buffers
  launch();
}

void StepGraph::capture(const StepParts& parts) {
  memory::reset_peak(device_);
  cudaStream_t s = cuda::stream();
  // Thread-local mode: a host wait inside the step is an error here (it would not be replayed),
  // while the loader's threads may go on using CUDA. The allocator may still take a segment for
  // the pool (core/memory.cpp, system_alloc).
  drawn_ = HostDrawnLog{};
  // No helper thread's device-wide wait or legacy-stream work while capturing (context.h).
  std::unique_lock<std::shared_mutex> guard(cuda::capture_mutex());
  HG_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  auto g = std::make_unique<Graph>();
  try {
    {
      HostDrawnCapture record(drawn_);
      parts.queue();
    }
    HG_CUDA_CHECK(cudaStreamEndCapture(s, &g->graph));
    HG_CUDA_CHECK(cudaGraphInstantiate(&g->exec, g->graph, 0));
    HG_CUDA_CHECK(cudaGraphGetNodes(g->graph, nullptr, &nodes_));
  } catch (const std::exception& e) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
      cudaGraph_t ended = nullptr;  // ends the capture; what it holds is discarded
      if (cudaStreamEndCapture(s, &ended) == cudaSuccess && ended) cudaGraphDestroy(ended);
    }
    cudaGetLastError();       // the capture's sticky error, not the next caller's
    drawn_ = HostDrawnLog{};  // the failed capture's draws are not this graph's
    autograd::clear_tape();   // what the step's forward recorded before it failed
    nodes_ = 0;
    throw GraphCaptureError(str("CUDA graph of the training step: capturing the step failed: ",
                                e.what(), "; set cuda_graph: false to run the step eagerly"));
  }
  graph_ = std::move(g);
  capture_memory_ = memory::stats(device_);
  if (parts.addresses) addresses_ = parts.addresses();
}

void StepGraph::launch() { HG_CUDA_CHECK(cudaGraphLaunch(graph_->exec, cuda::stream())); }

#else  // a build without CUDA

struct StepGraph::Graph {};
StepGraph::StepGraph(Device device, int warmup) : device_(device), warmup_(warmup) {
  throw Error("a CUDA graph of the training step needs CUDA: this haargrad was built without it");
}
StepGraph::~StepGraph() = default;
bool StepGraph::captured() const { return false; }
void StepGraph::step(const StepParts&) {}
void StepGraph::capture(const StepParts&) {}
void StepGraph::launch() {}

#endif

}  // namespace hg::train
