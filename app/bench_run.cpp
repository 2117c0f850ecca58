// One benchmark row: inference and training-step timings and memory of one model configuration
// (see bench_run.h).
#include "app/bench_run.h"

#include <algorithm>
#include <functional>

#include "app/bench_breakdown.h"
#include "app/device_ceilings.h"
#include "core/autograd.h"
#include "core/error.h"
#include "core/host_sync.h"
#include "core/random.h"
#include "layers/loss.h"
#include "models/convnext.h"
#include "train/optimizer.h"
#include "train/step_graph.h"
#include "train/trainer.h"

#ifdef HAARGRAD_WITH_CUDA
#include "kernels/cuda/context.h"
#endif

namespace hg::app {

void check_precision(const std::string& precision, Device device, const char* command) {
  HG_CHECK(precision == "fp32" || precision == "tf32" || precision == "bf16", command,
           ": unknown precision '", precision, "' (fp32, tf32 or bf16)");
  HG_CHECK(precision != "tf32" || device == Device::cuda, command,
           ": precision tf32 needs --device cuda (the CPU computes exact fp32)");
}

WTConvMode parse_wtconv_mode(const std::string& s) {
  if (s == "fused") return WTConvMode::fused;
  if (s == "unfused" || s == "reference") return WTConvMode::reference;
  throw Error(str("bench: unknown --wtconv mode '", s,
                  "' (fused, or unfused = reference as the config key wtconv_mode calls it)"));
}

PrecisionScope::PrecisionScope(const std::string& precision, Device device, const char* command)
    : device_(device) {
  check_precision(precision, device, command);
#ifdef HAARGRAD_WITH_CUDA
  if (device == Device::cuda) cuda::set_allow_tf32(precision == "tf32");
#endif
}

PrecisionScope::~PrecisionScope() {
#ifdef HAARGRAD_WITH_CUDA
  // Only on the GPU: the switch creates the cuBLAS handle, which throws where no GPU exists.
  if (device_ == Device::cuda) {
    try {
      cuda::set_allow_tf32(false);
    } catch (...) {  // a destructor must not throw
    }
  }
#endif
}

namespace {

// Whatever happens in a row, what it held is given back when the row's locals are gone.
struct ReleaseOnExit {
  Device device;
  ~ReleaseOnExit() {
    try {
      release_device_memory(device);
    } catch (...) {  // a destructor must not throw; the next row starts with a release anyway
    }
  }
};

// Runs `warmup` untimed steps, then `steps` timed ones between consecutive device marks (so the
// time includes any gap the host leaves between steps), and records the timed steps' memory (the
// warm-up steps size the allocator's memory: their peaks are not the steady state's).
PhaseResult run_phase(Device device, int warmup, int steps, const std::function<void()>& step) {
  DeviceClock clock(device, steps + 1);
  for (int i = 0; i < warmup; ++i) step();
  device_sync(device);
  memory::reset_peak(device);
  const int64_t allocs_before = memory::stats(device).system_allocs, syncs_before = host_syncs();
  clock.mark();
  for (int i = 0; i < steps; ++i) {
    step();
    clock.mark();
  }
  const int64_t syncs = host_syncs() - syncs_before;  // before the waits that end the timing
  clock.sync();
  device_sync(device);  // surfaces asynchronous kernel errors here, not in the next row
  PhaseResult r;
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) ms.push_back(clock.elapsed_ms(i, i + 1));
  r.ms = summarize(ms);
  const MemoryStats st = memory::stats(device);
  r.mem.peak = st.peak;
  r.mem.total_peak = st.total_peak;
  r.mem.reserved_peak = st.reserved_peak;
  r.mem.system_allocs = st.system_allocs - allocs_before;
  r.mem.host_syncs = syncs;
  r.mem.device_used = device_used_bytes(device);
  return r;
}

Tensor random_labels(int64_t n, int64_t num_classes, uint64_t seed, Device device) {
  autograd::NoGradGuard no_grad;  // data is not recorded
  Generator gen(seed);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t& y : v) y = gen.randint(num_classes);
  return Tensor::from_vector({n}, v, device);
}

}  // namespace

bool is_out_of_memory(const std::string& message) {
  return message.find("out of memory") != std::string::npos ||
         message.find("out of host memory") != std::string::npos ||  // the CPU allocator's
         message.find("ALLOC_FAILED") != std::string::npos;
}

void release_device_memory(Device device) {
  autograd::clear_tape();
  memory::empty_cache(device);
  memory::reset_peak(device);
}

Tensor random_uniform(const Shape& shape, uint64_t seed, Device device) {
  autograd::NoGradGuard no_grad;  // not an activation of a recorded step
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  // splitmix64: a std::mt19937 normal per element costs seconds at 19M elements (batch 128 @224).
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e5ull;
  for (float& x : v) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    x = static_cast<float>(static_cast<double>(z >> 40) * (2.0 / 16777216.0) - 1.0);  // 24 bits
  }
  return Tensor::from_vector(shape, v, device);
}

BenchResult run_bench_row(const BenchConfig& cfg) {
  HG_CHECK(cfg.batch >= 1 && cfg.img_size >= 1 && cfg.steps >= 1, "bench: batch, img-size and steps must be >= 1, got ",
           cfg.batch, ", ", cfg.img_size, ", ", cfg.steps);
  HG_CHECK(device_available(cfg.device), "bench: device ", device_name(cfg.device),
           " is not available: ", train::cuda_unavailable_reason(),
           "; run on the CPU with --device cpu");
  const ModelConfig mc = cfg.model_config ? *cfg.model_config : model_config(cfg.model);
  mc.check_img_size(cfg.img_size);
  HG_CHECK(mc.wtconv == !cfg.wtconv.empty(), "bench: model ", cfg.model,
           mc.wtconv ? " needs a --wtconv mode" : " has no WTConv layers, yet a --wtconv mode was given");
  const Device dev = cfg.device;
  const int warmup = std::max(1, cfg.warmup);  // the first step (plans, lazy state) is never timed

  ReleaseOnExit release{dev};  // declared first: runs after the model and data below are gone
  release_device_memory(dev);
  PrecisionScope precision(cfg.precision, dev);
#ifdef HAARGRAD_WITH_CUDA
  if (dev == Device::cuda) cuda::set_gemm_autotune(cfg.gemm_autotune);
#endif

  BenchResult r;
  r.config = cfg;
  r.config.warmup = warmup;
  r.requested_batch = cfg.batch;
  device_sync(dev);
  r.baseline_device_used = device_used_bytes(dev);

  std::unique_ptr<ConvNeXt> model;
  {
    autograd::NoGradGuard no_grad;  // construction is not recorded
    model = std::make_unique<ConvNeXt>(mc, cfg.seed, DType::f32, dev);
  }
  if (mc.wtconv) model->set_wtconv_mode(parse_wtconv_mode(cfg.wtconv));
  model->compute_dtype = cfg.precision == "bf16" ? DType::bf16 : DType::f32;
  r.params_trainable = model->num_trainable();
  r.params_fixed = model->num_fixed();
  const Tensor x = random_uniform({cfg.batch, cfg.img_size, cfg.img_size, mc.in_chans}, cfg.seed + 1, dev);
  const Tensor labels = random_labels(cfg.batch, mc.num_classes, cfg.seed + 2, dev);

  // ---- inference first, while no gradient or optimizer state exists (timm measures a bare model)
  memory::reset_peak(dev);
  r.infer = run_phase(dev, warmup, cfg.steps, [&] {
    autograd::NoGradGuard no_grad;
    Tensor logits = model->forward(x, false);
  });
  memory::empty_cache(dev);  // inference's cached blocks are not the training step's memory
  memory::reset_peak(dev);

  // ---- full training step: zero_grad, forward, loss, backward, optimizer step (default: timm's
  // AdamW, lr 1e-3, weight decay 0.05 on weights, none on norms / biases / scales; with a config,
  // its opt, lr, weight_decay, momentum, clip_grad and label smoothing, as the trainer's step)
  std::vector<ParamRef> params;
  for (const ParamRef& p : model->named_tensors())
    if (p.trainable) params.push_back(p);
  const auto groups = train::param_groups_weight_decay(params, cfg.lr, cfg.weight_decay);
  std::unique_ptr<train::Optimizer> opt =
      train::make_optimizer(cfg.opt, groups, cfg.momentum, cfg.adam);
  const train::StepParts parts =
      train::optimizer_step_parts(*opt, [&] {  // the step up to the update
        opt->zero_grad();
        {
          Tensor loss = cross_entropy(model->forward(x, true), labels, cfg.smoothing);
          autograd::backward(loss);
        }
        autograd::NoGradGuard no_grad;
        if (cfg.clip_grad) train::clip_gradients(*opt, *cfg.clip_grad);  // fused into AdamW
      });
  std::unique_ptr<train::StepGraph> graph;
  if (cfg.cuda_graph && dev == Device::cuda && opt->replayable())
    graph = std::make_unique<train::StepGraph>(dev);
  // With a graph, the warm-up covers its eager steps, the capture and one replay: the timed steps
  // are all replays.
  const int train_warmup = graph ? std::max(warmup, train::StepGraph::kDefaultWarmup + 2) : warmup;
  r.train = run_phase(dev, train_warmup, cfg.steps, [&] {
    if (graph)
      graph->step(parts);
    else
      parts.eager();
  });
  if (graph) {
    r.graph_nodes = static_cast<int64_t>(graph->nodes());
    // A replay allocates nothing: the step's live peaks are those of the captured step.
    const MemoryStats& cm = graph->capture_memory();
    for (int i = 0; i < kNumCategories; ++i)
      r.train.mem.peak[i] = std::max(r.train.mem.peak[i], cm.peak[i]);
    r.train.mem.total_peak = std::max(r.train.mem.total_peak, cm.total_peak);
    r.train.mem.reserved_peak = std::max(r.train.mem.reserved_peak, cm.reserved_peak);
  }
  if (cfg.breakdown) {
    r.breakdown = time_breakdown(*model, *opt, x, labels, 3);
    r.ceilings.copy_bytes_per_s = copy_bytes_per_second(dev);
    r.ceilings.gemm_flops_per_s = gemm_flops_per_second(dev, model->compute_dtype);
  }
  return r;
}

}  // namespace hg::app
