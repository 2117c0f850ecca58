// Recording the allocation trace of a few training steps (see step_trace.h).
#include "train/step_trace.h"

#include <memory>

#include "core/autograd.h"
#include "core/error.h"
#include "core/memory.h"
#include "layers/loss.h"
#include "models/convnext.h"
#include "train/optimizer.h"

namespace hg::train {
namespace {

// What a previous workload left behind must not count: no tape, no cached segments, fresh peaks.
void release(Device dev) {
  autograd::clear_tape();
  memory::empty_cache(dev);
  memory::reset_peak(dev);
}

// The step's inputs, not recorded: a batch of values in [-1, 1) and labels spread over the classes.
std::pair<Tensor, Tensor> synthetic_batch(const ModelConfig& mc, const StepTraceOptions& o) {
  autograd::NoGradGuard no_grad;
  std::vector<float> x(static_cast<size_t>(o.batch) * o.img_size * o.img_size * mc.in_chans);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>((i * 2654435761u) % 2048) / 1024.0f - 1.0f;
  std::vector<int64_t> y(static_cast<size_t>(o.batch));
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<int64_t>(i * 7919) % mc.num_classes;
  return {Tensor::from_vector({o.batch, o.img_size, o.img_size, mc.in_chans}, x, o.device),
          Tensor::from_vector({o.batch}, y, o.device)};
}

}  // namespace

RecordedSteps record_training_steps(const StepTraceOptions& o) {
  HG_CHECK(o.precision == "fp32" || o.precision == "bf16",
           "record_training_steps: precision must be fp32 or bf16, got '", o.precision, "'");
  HG_CHECK(o.batch >= 1 && o.steps >= 1,
           "record_training_steps: batch and steps must be >= 1, got ", o.batch, " and ", o.steps);
  const ModelConfig mc = model_config(o.model);  // throws for an unknown name
  mc.check_img_size(o.img_size);
  release(o.device);
  RecordedSteps r;
  int64_t allocs_before = memory::stats(o.device).system_allocs;
  auto step_figures = [&] {  // as replay_trace counts a step
    const MemoryStats st = memory::stats(o.device);
    r.allocator.push_back(
        ReplayStep{st.total_peak, st.reserved_peak, st.reserved, st.system_allocs - allocs_before});
    allocs_before = st.system_allocs;
    memory::reset_peak(o.device);
  };
  memory::start_trace(o.device);
  try {
    std::unique_ptr<ConvNeXt> model;
    {
      autograd::NoGradGuard no_grad;  // building the model is not recorded on the tape
      model = std::make_unique<ConvNeXt>(mc, 0, DType::f32, o.device);
    }
    model->compute_dtype = o.precision == "bf16" ? DType::bf16 : DType::f32;
    std::vector<ParamRef> params;
    for (const ParamRef& p : model->named_tensors())
      if (p.trainable) params.push_back(p);
    AdamW opt(param_groups_weight_decay(params, 1e-3, 0.05));
    const auto [x, labels] = synthetic_batch(mc, o);
    for (int s = 0; s < o.steps; ++s) {
      opt.zero_grad();
      Tensor loss = cross_entropy(model->forward(x, true), labels);
      autograd::backward(loss);  // the step's end in the trace (memory::step_done)
      step_figures();            // taken there, as the replay counts a step: the loss still alive
      loss = Tensor();
      autograd::NoGradGuard no_grad;
      opt.step();
    }
    step_figures();
    r.trace = memory::stop_trace(o.device);  // before the model and the optimizer are destroyed
  } catch (...) {
    memory::stop_trace(o.device);
    release(o.device);
    throw;
  }
  // "batch N": what alloc-trace --load checks against --batches (recorded_batch)
  r.trace.note = str(o.model, " ", o.precision, " batch ", o.batch, " @", o.img_size, " on ",
                     device_name(o.device), ", ", o.steps,
                     " training steps (zero_grad, forward, cross-entropy, backward, AdamW)");
  release(o.device);
  return r;
}

}  // namespace hg::train
