// The tape: record() appends, backward() replays in reverse (see autograd.h for the rules).
#include "core/autograd.h"

#include <unordered_map>

#include "core/ops.h"

namespace hg::autograd {
namespace {

struct Entry {
  const char* name;
  std::vector<std::shared_ptr<GradSlot>> inputs;   // null where the input needs no gradient
  std::vector<std::shared_ptr<GradSlot>> outputs;
  std::vector<Shape> input_shapes, output_shapes;
  std::vector<DType> output_dtypes;
  std::vector<Device> output_devices;
  BackwardFn fn;  // owns the saved tensors
};

thread_local bool t_grad_enabled = true;
thread_local std::vector<Entry> t_tape;

// Adds `g` into the slot: leaves own a persistent buffer (Category::gradients) that accumulates;
// non-leaves adopt the first gradient and sum later ones out of place (g may be shared).
void accumulate(GradSlot& slot, const Tensor& g) {
  if (!slot.grad.defined()) {
    if (slot.is_leaf) {
      memory::CategoryScope scope(Category::gradients);
      slot.grad = Tensor::empty(g.shape(), g.dtype(), g.device());
      slot.grad.copy_(g);
    } else {
      slot.grad = g;
    }
  } else if (slot.is_leaf && slot.stale) {  // zero_grad left the buffer: overwrite it
    slot.grad.copy_(g);
    slot.stale = false;
  } else if (slot.is_leaf) {
    ops::add_(slot.grad, g);
  } else {
    slot.grad = ops::add(slot.grad, g);
  }
}

}  // namespace

bool is_grad_enabled() { return t_grad_enabled; }
NoGradGuard::NoGradGuard() : saved_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = saved_; }

bool any_requires_grad(const std::vector<Tensor>& tensors) {
  if (!t_grad_enabled) return false;
  for (const Tensor& t : tensors)
    if (t.requires_grad()) return true;
  return false;
}

void record(const char* name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            BackwardFn backward) {
  if (!any_requires_grad(inputs)) return;
  Entry e;
  e.name = name;
  for (const Tensor& t : inputs) {
    e.inputs.push_back(t.requires_grad() ? t.grad_slot() : nullptr);
    e.input_shapes.push_back(t.defined() ? t.shape() : Shape{});
  }
  for (const Tensor& t : outputs) {
    auto slot = std::make_shared<GradSlot>();
    slot->is_leaf = false;
    t.set_grad_slot(slot);
    e.outputs.push_back(slot);
    e.output_shapes.push_back(t.shape());
    e.output_dtypes.push_back(t.dtype());
    e.output_devices.push_back(t.device());
  }
  e.fn = std::move(backward);
  t_tape.push_back(std::move(e));
}

void backward(const Tensor& loss, const Tensor& grad) {
  HG_CHECK(loss.requires_grad() && loss.grad_slot(),
           "backward: the loss does not require grad (was it computed in no-grad mode, or from "
           "tensors none of which requires grad?)");
  {
    NoGradGuard no_grad;  // backward itself is not recorded
    Tensor seed = grad.defined() ? grad : Tensor::full(loss.shape(), 1.0, loss.dtype(), loss.device());
    check_same_shape("backward (seed gradient)", seed, loss);
    accumulate(*loss.grad_slot(), seed);

    // Leaves with an on_grad_final hook: how many entries still take each as an input. When the
    // count reaches 0 the leaf's gradient is final and the hook runs (reached or not).
    std::unordered_map<GradSlot*, int> pending;
    for (const Entry& e : t_tape)
      for (const auto& s : e.inputs)
        if (s && s->is_leaf && s->on_grad_final) ++pending[s.get()];
    auto inputs_done = [&pending](const Entry& e) {
      if (pending.empty()) return;
      for (const auto& s : e.inputs) {
        auto it = s ? pending.find(s.get()) : pending.end();
        if (it != pending.end() && --it->second == 0) s->on_grad_final();
      }
    };

    while (!t_tape.empty()) {
      Entry e = std::move(t_tape.back());
      t_tape.pop_back();
      bool reached = false;
      for (auto& s : e.outputs) reached = reached || s->grad.defined();
      if (!reached) {  // this op does not lead to the loss
        inputs_done(e);
        continue;
      }

      std::vector<Tensor> grad_outputs;
      for (size_t i = 0; i < e.outputs.size(); ++i) {
        Tensor g = e.outputs[i]->grad;
        if (!g.defined()) g = Tensor::zeros(e.output_shapes[i], e.output_dtypes[i], e.output_devices[i]);
        grad_outputs.push_back(g);
        if (!e.outputs[i]->is_leaf) e.outputs[i]->grad = Tensor();  // consumed: free it now
      }
      std::vector<bool> needs;
      for (auto& s : e.inputs) needs.push_back(s != nullptr);
      Backward ctx(std::move(grad_outputs), std::move(needs));
      std::vector<Tensor> grad_inputs = e.fn(ctx);
      HG_CHECK(grad_inputs.size() == e.inputs.size(), "backward of '", e.name, "' returned ",
               grad_inputs.size(), " gradients for ", e.inputs.size(), " inputs");
      for (size_t i = 0; i < e.inputs.size(); ++i) {
        if (!e.inputs[i] || !grad_inputs[i].defined()) continue;
        HG_CHECK(grad_inputs[i].shape() == e.input_shapes[i], "backward of '", e.name,
                 "': gradient of input ", i, " has shape ", shape_str(grad_inputs[i].shape()),
                 ", the input has ", shape_str(e.input_shapes[i]));
        accumulate(*e.inputs[i], grad_inputs[i]);
      }
      inputs_done(e);
      // e (and the tensors its lambda saved) is destroyed here
    }
    if (!loss.grad_slot()->is_leaf) loss.grad_slot()->grad = Tensor();
  }
  memory::step_done(Device::cpu);
  memory::step_done(Device::cuda);
}

void clear_tape() {
  t_tape.clear();
  memory::step_done(Device::cpu);
  memory::step_done(Device::cuda);
}

size_t tape_size() { return t_tape.size(); }

}  // namespace hg::autograd
