// The tape: record() appends, backward() replays in reverse (see autograd.h for the rules).
#include "core/autograd.h"

#include <unordered_map>

#include "core/ops.h"

namespace hg::autograd {
namespace {

struct Entry {
  const char* name;
  std::vector<std::shared_ptr<GradSlot>> inputs;  // null where the input needs no gradient
  std::vector<std::shared_ptr<GradSlot>> outputs;
  std::vector<Shape> input_shapes, output_shapes;
  std::vector<DType> output_dtypes;
  std::vector<Device> output_devices;
  BackwardFn fn;  // owns the saved tensors
};

thread_local bool t_grad_enabled = true;
thread_local std::vector<Entry> t_tape;

// A leaf's first gradient of a backward is copied into the leaf's buffer. The copies wait here and
// go together (copy_many: one kernel launch per up to 128 on the GPU, against one cudaMemcpyAsync
// and one graph node each, ~1.2 us apiece plus the gaps: ~0.15-0.3 ms of a ConvNeXt-T /
// WTConvNeXt-T bf16 step on the H200, twenty-first session). Flushed when they hold
// kPendingBytes or kPendingCopies, before anything reads or adds to a waiting leaf's buffer
// (accumulate, the on_grad_final hooks) and at the end of backward(). The waiting gradients live
// longer than they did: 8 MiB keeps that small (at 16 MiB the allocator's step test,
// tests/train/step_memory_test.cpp, saw new system allocations in the third step).
struct PendingCopies {
  std::vector<GradSlot*> slots;
  std::vector<Tensor> dst, src;
  size_t bytes = 0;
};
thread_local PendingCopies t_pending;
constexpr size_t kPendingBytes = size_t(8) << 20;
constexpr size_t kPendingCopies = 96;

void flush_pending_copies() {
  if (t_pending.dst.empty()) return;
  PendingCopies p = std::move(t_pending);  // emptied first: a failed copy leaves nothing waiting
  t_pending = PendingCopies{};
  copy_many(p.dst, p.src);
}

bool copy_pending(const GradSlot* slot) {
  for (const GradSlot* s : t_pending.slots)
    if (s == slot) return true;
  return false;
}

// Adds `g` into the slot: leaves own a persistent buffer (Category::gradients) that accumulates;
// non-leaves adopt the first gradient and sum later ones out of place (g may be shared).
void accumulate(GradSlot& slot, const Tensor& g) {
  if (slot.is_leaf && copy_pending(&slot)) flush_pending_copies();  // its buffer must hold g first
  if (!slot.grad.defined() && !slot.is_leaf) {
    slot.grad = g;
  } else if (!slot.grad.defined() || slot.stale) {  // a leaf's first gradient: copied, later
    if (!slot.grad.defined()) {
      memory::CategoryScope scope(Category::gradients);
      slot.grad = Tensor::empty(g.shape(), g.dtype(), g.device());
    }
    slot.stale = false;
    t_pending.slots.push_back(&slot);
    t_pending.dst.push_back(slot.grad);
    t_pending.src.push_back(g);
    t_pending.bytes += g.nbytes();
    if (t_pending.bytes >= kPendingBytes || t_pending.dst.size() >= kPendingCopies)
      flush_pending_copies();
  } else if (slot.is_leaf) {
    ops::add_(slot.grad, g);
  } else {
    slot.grad = ops::add(slot.grad, g);
  }
}

// Flushes the waiting copies when backward() leaves by an exception (a normal end flushes before
// it); a flush that fails here drops them, as a destructor must not throw: the gradients of a
// failed backward are not defined anyway.
struct FlushOnExit {
  ~FlushOnExit() {
    try {
      flush_pending_copies();
    } catch (...) {
      t_pending = PendingCopies{};
    }
  }
};

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
    FlushOnExit flush_on_exit;
    Tensor seed =
        grad.defined() ? grad : Tensor::full(loss.shape(), 1.0, loss.dtype(), loss.device());
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
        if (it != pending.end() && --it->second == 0) {
          if (copy_pending(s.get())) flush_pending_copies();  // the hook reads the buffer
          s->on_grad_final();
        }
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
        if (!g.defined())
          g = Tensor::zeros(e.output_shapes[i], e.output_dtypes[i], e.output_devices[i]);
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
    flush_pending_copies();  // (FlushOnExit would; here its errors propagate)
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
