// One row of `haargrad bench`: build a model on the device, time inference and full training
// steps on synthetic data already on the device, and record step-time statistics, parameter
// counts and memory (our allocator's peaks per category, system allocations, the driver's view).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "app/bench_timer.h"
#include "core/memory.h"
#include "core/tensor.h"
#include "kernels/wtconv.h"
#include "models/config.h"
#include "train/optimizer.h"

namespace hg::app {

/// Throws hg::Error naming `command` for a precision other than fp32, tf32, bf16, or tf32 on the
/// CPU (what PrecisionScope runs, checked before the first row).
void check_precision(const std::string& precision, Device device, const char* command = "bench");

/// The WTConv mode a bench row names: "fused", or "unfused" (the config key's "reference" too).
/// Throws hg::Error for another name.
kernels::WTConvMode parse_wtconv_mode(const std::string& s);

/// While alive: TF32 tensor-core math allowed on the GPU for `precision` "tf32", exact fp32
/// otherwise (bf16 rows too: their f32 GEMMs stay exact); exact fp32 again when it ends (also on a
/// throw). Throws hg::Error naming `command` for a precision other than fp32, tf32, bf16, or tf32
/// on the CPU.
class PrecisionScope {
 public:
  PrecisionScope(const std::string& precision, Device device, const char* command = "bench");
  ~PrecisionScope();
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  Device device_;
};

/// What one row measures.
struct BenchConfig {
  std::string model;          ///< a models/config.h name, e.g. "wtconvnext_tiny"
  std::string precision;      ///< "fp32" (exact fp32) or "tf32" (cuBLAS / cuDNN may use TF32)
  std::string wtconv;         ///< "fused" / "unfused" for WTConv models, "" for ConvNeXt
  int batch = 128, img_size = 224;
  int steps = 20;             ///< timed steps per phase
  int warmup = 5;             ///< untimed steps first (at least 1: the first step is never timed)
  Device device = Device::cuda;
  bool breakdown = false;     ///< also time one training step op type by op type
  uint64_t seed = 0;
  /// The training step's loss and optimizer. Defaults: timm benchmark.py's (plain cross-entropy,
  /// AdamW lr 1e-3, weight decay 0.05); `bench CONFIG.yaml` takes the config's, as the trainer does.
  std::optional<ModelConfig> model_config;  ///< the model a config describes; unset: model_config(model)
  double smoothing = 0.0;                   ///< label smoothing
  std::string opt = "adamw";  ///< train::make_optimizer's names: "adamw" | "sgd" | "momentum"
  double lr = 1e-3, weight_decay = 0.05, momentum = 0.9;
  train::AdamSettings adam;                 ///< opt adamw's betas and eps
  std::optional<double> clip_grad;          ///< global-norm clip before each update; unset: none
  /// The training step as one CUDA graph (train/step_graph.h) where it can be: device cuda and
  /// AdamW. The row says whether it was.
  bool cuda_graph = true;
  /// cuBLASLt's algorithm per GEMM shape timed on its first call (kernels/cuda/context.h).
  bool gemm_autotune = true;
};

/// Memory of one phase, in bytes (system_allocs and host_syncs are counts).
struct PhaseMemory {
  std::array<int64_t, kNumCategories> peak{};  ///< memory::stats peak per category
  int64_t total_peak = 0;      ///< peak of live bytes, all categories
  int64_t reserved_peak = 0;   ///< peak of bytes held from the system (segments in use or cached)
  int64_t system_allocs = 0;   ///< malloc / cudaMalloc calls during the timed steps (expect 0)
  int64_t host_syncs =
      0;  ///< host waits on the GPU during the timed steps (core/host_sync.h; expect 0)
  std::optional<int64_t> device_used;  ///< cudaMemGetInfo total - free right after the timed steps
};

struct PhaseResult {
  TimingStats ms;  ///< per-step times in ms, after warm-up
  PhaseMemory mem;
};

/// Per op type of one training step: forward and backward ms summed over the model.
/// One op type's share of a training step: measured times and what the pieces must at least do
/// (see bench_breakdown.h: FLOPs of their matmuls and convolutions, bytes of their inputs,
/// outputs, parameters and gradients, forward + backward).
struct BreakdownEntry {
  double forward_ms = 0, backward_ms = 0;
  double flops = 0, bytes = 0;
};
/// The device's measured ceilings for the roofline column (app/device_ceilings.h).
struct Ceilings {
  double copy_bytes_per_s = 0, gemm_flops_per_s = 0;
};

struct BenchResult {
  BenchConfig config;          ///< as run (batch may be smaller than asked after --retry)
  int requested_batch = 0;     ///< the batch asked for
  int64_t params_trainable = 0, params_fixed = 0;
  std::optional<int64_t> baseline_device_used;  ///< cudaMemGetInfo used before the model was built
  PhaseResult infer, train;
  /// Op type -> times, in the order of kBreakdownCategories (empty unless config.breakdown).
  std::map<std::string, BreakdownEntry> breakdown;
  Ceilings ceilings;           ///< measured with the breakdown (zeros without one)
  int64_t graph_nodes = 0;     ///< nodes of the training step's CUDA graph; 0: the step ran eagerly
  std::string error;           ///< non-empty when the row failed (out of memory)
  bool ok() const { return error.empty(); }
};

/// Runs one row. The model, optimizer and data live only inside this call; on return (or throw)
/// everything the row held is released (tape cleared, cached segments given back) so rows do not
/// see each other's memory. Throws hg::Error when the device runs out of memory ("CUDA out of
/// memory: asked for N bytes ...") or on any other failure.
BenchResult run_bench_row(const BenchConfig& cfg);

/// Releases what a row left behind on `device`: clears the tape, gives the allocator's cached
/// segments back, then resets the peaks.
void release_device_memory(Device device);

/// A tensor of `shape` on `device` with values uniform in [-1, 1) drawn from `seed` (cheap to
/// make at the sizes of a benchmark batch). Not recorded on the tape.
Tensor random_uniform(const Shape& shape, uint64_t seed, Device device);

/// True when the message is an out-of-memory failure of our allocator, CUDA, cuDNN or cuBLAS.
bool is_out_of_memory(const std::string& message);

}  // namespace hg::app
