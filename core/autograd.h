// Reverse-mode autograd on a tape. This file is the whole contract between an op and autograd.
//
// An op (built-in or fused) does two things:
//   1. computes its outputs with plain kernels (no autograd involved), then
//   2. calls autograd::record(name, inputs, outputs, backward), where `backward` is a lambda that
//      captures exactly what the backward pass needs (the "saved tensors") by value.
//
// record() appends one entry to this thread's tape when grad mode is on and some input requires a
// gradient; otherwise it does nothing, so the captured tensors are released at once (no-grad
// evaluation costs nothing extra). backward(loss) walks the tape in reverse: it hands each entry
// the gradients of its outputs and accumulates what the entry returns into its inputs' gradients.
//
// Gradient rules (tiny-cuda-nn / llm.c style, stated once here):
//   * parameter (leaf) gradients ACCUMULATE across backward calls, in memory of Category::gradients
//     that is allocated once and then reused (zero_grad() marks it stale: the next backward's first
//     contribution overwrites it instead of adding, so no zeroing pass runs);
//   * activation gradients are OVERWRITTEN-then-summed: the first contribution is adopted, later
//     ones (a tensor used twice, e.g. the residual stream) are added; each is freed as soon as the
//     entry that produced the activation has consumed it;
//   * an entry's saved tensors die when the entry has run, so memory is returned during backward.
//
// Worked example: a fused op y = a * x + b with a scalar parameter a (docs/autograd.md has more).
//
//   Tensor axpb(const Tensor& x, const Tensor& a, const Tensor& b) {
//     Tensor y = kernels::axpb_forward(x, a, b);                  // plain computation
//     autograd::record("axpb", {x, a, b}, {y}, [x, a](autograd::Backward& g) {
//       const Tensor& gy = g.grad_output(0);
//       return std::vector<Tensor>{
//           g.needs_grad(0) ? kernels::scale(gy, a) : Tensor(),   // dL/dx
//           g.needs_grad(1) ? kernels::dot(gy, x) : Tensor(),     // dL/da
//           g.needs_grad(2) ? gy : Tensor()};                     // dL/db
//     });
//     return y;
//   }
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace hg::autograd {

/// Gradient storage shared by all handles of one tensor that requires grad.
struct GradSlot {
  Tensor grad;         ///< accumulated gradient (undefined until reached)
  bool is_leaf = true; ///< leaves keep their gradient after backward; non-leaves free it
  /// Leaves only: `grad` keeps its buffer but holds no gradient yet (Tensor::zero_grad marks it
  /// instead of filling zeros): the next accumulation overwrites the buffer instead of adding to
  /// it, and Tensor::grad() zero-fills it first if it is read before. Saves a fill and an add
  /// kernel per parameter per step.
  bool stale = false;
  /// Leaves only: called by backward() as soon as this leaf's gradient is final for that call,
  /// i.e. right after the last tape entry that takes the leaf as an input has run (not called for a
  /// leaf that no entry takes). Data-parallel training starts reducing a gradient bucket here,
  /// while the rest of the backward goes on (train/data_parallel.h). Empty = no hook.
  std::function<void()> on_grad_final;
};

/// What a backward function receives: one gradient per output and which inputs need one.
class Backward {
 public:
  Backward(std::vector<Tensor> grad_outputs, std::vector<bool> needs_grad)
      : grad_outputs_(std::move(grad_outputs)), needs_grad_(std::move(needs_grad)) {}
  /// dL/d(output i). Always defined (zeros when the output did not reach the loss).
  const Tensor& grad_output(int i = 0) const { return grad_outputs_.at(static_cast<size_t>(i)); }
  /// True when input i requires a gradient; return an undefined Tensor for inputs that do not.
  bool needs_grad(int i) const { return needs_grad_.at(static_cast<size_t>(i)); }

 private:
  std::vector<Tensor> grad_outputs_;
  std::vector<bool> needs_grad_;
};

/// Returns dL/d(input i) for every input, in order; undefined where needs_grad(i) is false.
/// Must not modify the gradients it receives (they may be shared).
using BackwardFn = std::function<std::vector<Tensor>(Backward&)>;

/// Records one op on this thread's tape (see the file comment). `outputs` are marked as requiring
/// grad. A no-op in no-grad mode or when no input requires grad.
void record(const char* name, const std::vector<Tensor>& inputs,
            const std::vector<Tensor>& outputs, BackwardFn backward);

/// Runs the tape backwards from `loss` (seeded with dL/dloss = 1, or `grad` when given), then
/// clears the tape and marks the step as done for the allocator (memory::step_done).
/// Throws hg::Error when loss does not require grad or a backward returns a mis-shaped gradient.
void backward(const Tensor& loss, const Tensor& grad = Tensor());

/// Drops every recorded entry without running it (e.g. after an evaluation in grad mode).
void clear_tape();
/// Number of entries on this thread's tape (for tests and the activation-bytes report).
size_t tape_size();

bool is_grad_enabled();
/// Disables recording on this thread while it lives; like torch.no_grad.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool saved_;
};

/// True when any tensor in the list requires grad and grad mode is on.
bool any_requires_grad(const std::vector<Tensor>& tensors);

}  // namespace hg::autograd
