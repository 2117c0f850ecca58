// Optimizers with PyTorch semantics (AdamW, SGD with momentum), timm's weight-decay parameter
// groups, and global-norm gradient clipping.
//
// Usage (the golden "adamw3" check and the trainer):
//   auto groups = train::param_groups_weight_decay(model.named_tensors(), /*lr=*/1e-3,
//   /*wd=*/0.05); train::AdamW opt(groups);                 // betas (0.9, 0.999), eps 1e-8
//   ... backward ...; opt.step(); opt.zero_grad();
//   opt.param_groups()[g].lr = schedule(step);  // per-group lr, settable every step
//
// Parameters are updated in place (their dtype/device: CPU f32/f64 or CUDA f32; one kernel launch
// per tensor). A parameter whose gradient is undefined is skipped (its step count does not move).
// State tensors (AdamW exp_avg / exp_avg_sq, SGD momentum_buffer) are allocated on the first step
// that updates the parameter, in memory Category::optimizer_state, with the parameter's dtype and
// device. Everything is deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "kernels/optimizer.h"
#include "layers/module.h"
#include "train/config.h"

namespace hg::train {

/// Parameters that share a learning rate and a weight decay.
struct ParamGroup {
  std::vector<Tensor> params;
  /// Names for the state dict (same length as params); empty = "group<g>.<i>".
  std::vector<std::string> names;
  double lr = 1e-3;
  double weight_decay = 0.0;
  /// set_lr(lr) gives this group lr * lr_scale (layer-wise lr decay, train/layer_decay.h; timm's
  /// param_group['lr_scale'], applied by its schedulers)
  double lr_scale = 1.0;
};

/// True when timm would exempt the parameter from weight decay: ndim <= 1, a name ending in
/// ".bias", ParamRef::no_weight_decay (norms, layer-scale gamma, WTConv scales), or a name
/// containing "scale" or ending in "gamma" (the golden files' rule: decay only params with
/// ndim > 1 whose name has no "scale").
bool no_weight_decay(const ParamRef& p);

/// timm's param_groups_weight_decay: group 0 = decayed params (weight_decay), group 1 = the rest
/// (0); fixed buffers (trainable == false) are left out; order follows `params`. Empty groups are
/// dropped.
std::vector<ParamGroup> param_groups_weight_decay(const std::vector<ParamRef>& params, double lr,
                                                  double weight_decay);

/// Common part: the groups, zero_grad and state (de)serialisation through named tensors.
class Optimizer {
 public:
  explicit Optimizer(std::vector<ParamGroup> groups);
  virtual ~Optimizer() = default;
  /// One update of every parameter with a defined gradient.
  virtual void step() = 0;

  /// For a CUDA graph of the training step (train/step_graph.h): a replayable optimizer's step()
  /// is prepare_step() (host: state, step counts, this step's hyper-parameters uploaded to device
  /// memory) then queue_step() (the update kernels, reading the hyper-parameters from there), so
  /// a graph captures queue_step() once and replays it after each later prepare_step().
  virtual bool replayable() const { return false; }
  virtual void prepare_step() {
    HG_CHECK(false, "this optimizer cannot be split for a CUDA graph");
  }
  virtual void queue_step() { HG_CHECK(false, "this optimizer cannot be split for a CUDA graph"); }
  /// The device addresses queue_step() launches with; a graph checks at every replay that they
  /// are those it captured.
  virtual std::vector<const void*> queue_signature() const { return {}; }
  /// torch's clip_grad_norm_(parameters(), max_norm) as part of the next step, where this
  /// optimizer can fuse it: then the gradients' norm is queued now and the next step scales each
  /// gradient as it reads it (the gradients' memory unchanged), and it returns true. False: the
  /// caller clips with clip_grad_norm (clip_gradients does both).
  virtual bool clip_in_next_step(double /*max_norm*/) { return false; }
  /// Zeroes every defined parameter gradient in place (keeps the memory).
  void zero_grad();
  /// Mutable: change lr / weight_decay of a group between steps (schedules).
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  /// Sets lr of every group, times the group's lr_scale.
  void set_lr(double lr);
  /// All parameters, in group order.
  std::vector<Tensor> parameters() const;

  /// State as named tensors "<prefix><param name>.<state>" (state tensors on their device; counts
  /// as i64 scalars on the CPU), in parameter order. Parameters without state are absent.
  virtual std::vector<std::pair<std::string, Tensor>> state_dict(
      const std::string& prefix = "") const = 0;
  /// Restores state_dict() output (copied into freshly allocated state on the parameter's device).
  /// Only keys that start with `prefix` are read; among them, a key that names no parameter /
  /// state, a missing companion key, or a mis-shaped tensor throws hg::Error naming the key; so
  /// does state for some parameters and none for others (an edited or foreign file: the trainer's
  /// checkpoints hold every parameter's state or none).
  virtual void load_state_dict(const std::map<std::string, Tensor>& tensors,
                               const std::string& prefix = "") = 0;
  /// Whether a step leaves state that a checkpoint must keep (AdamW's moments, SGD's momentum):
  /// a resumed run without it starts that state from zero.
  virtual bool keeps_state() const { return true; }

 protected:
  /// Name of parameter i of group g (ParamGroup::names or "group<g>.<i>").
  std::string param_name(size_t g, size_t i) const;
  /// Calls f(name, param, group) for every parameter, in group order.
  template <typename F>
  void for_each_param(F&& f) const;
  /// Common load logic: `suffixes` are the state names per parameter; `load(param, name, tensors)`
  /// receives, per parameter that has all of them, the map suffix -> tensor, each tensor checked
  /// (named by its key) for what a step can leave: the parameter's shape and finite values, a
  /// non-negative exp_avg_sq, a "step" one whole number >= 0.
  void load_named(const std::map<std::string, Tensor>& tensors, const std::string& prefix,
                  const std::vector<std::string>& suffixes,
                  const std::function<void(const Tensor&, std::map<std::string, Tensor>&)>& load);

  std::vector<ParamGroup> groups_;
};

/// torch.optim.AdamW (decoupled weight decay; formula in kernels/optimizer.h). Per-parameter step
/// counts drive the bias corrections.
class AdamW : public Optimizer {
 public:
  explicit AdamW(std::vector<ParamGroup> groups, double beta1 = kTorchAdamBeta1,
                 double beta2 = kTorchAdamBeta2, double eps = kTorchAdamEps);
  void step() override;
  bool replayable() const override { return true; }
  void prepare_step() override;
  void queue_step() override;
  std::vector<const void*> queue_signature() const override;
  /// Every parameter on CUDA: the norm into a buffer of this optimizer (one launch per 256
  /// chunks), the scaling inside the next queue_step's update (kernels/optimizer.h
  /// adamw_update_multi: bit-identical to clip_grad_norm then step). Else false.
  bool clip_in_next_step(double max_norm) override;
  /// keys "<name>.exp_avg", "<name>.exp_avg_sq", "<name>.step"
  std::vector<std::pair<std::string, Tensor>> state_dict(
      const std::string& prefix = "") const override;
  void load_state_dict(const std::map<std::string, Tensor>& tensors,
                       const std::string& prefix = "") override;

  double beta1, beta2, eps;

 private:
  struct State {
    Tensor exp_avg, exp_avg_sq;
    int64_t step = 0;
  };
  std::map<const void*, State> state_;  // by Tensor::id()
  // prepare_step's work for queue_step: the CUDA tensors to update (their contiguous gradients
  // kept alive in keep_) and their hyper-parameter table in device memory.
  std::vector<kernels::AdamWTensor> on_gpu_;
  std::vector<Tensor> keep_;
  Tensor hyper_;
  // clip_in_next_step: the gradients' global norm (one f32 on the device, made once: a captured
  // graph reads it at one address), max_norm, and whether the next queue_step applies it
  Tensor clip_norm_;
  double clip_max_ = 0;
  bool clip_armed_ = false;
};

/// torch.optim.SGD (dampening 0; weight decay added to the gradient; optional Nesterov).
class SGD : public Optimizer {
 public:
  explicit SGD(std::vector<ParamGroup> groups, double momentum = 0.9, bool nesterov = false);
  void step() override;
  bool keeps_state() const override { return momentum != 0; }
  /// keys "<name>.momentum_buffer" (only when momentum != 0)
  std::vector<std::pair<std::string, Tensor>> state_dict(
      const std::string& prefix = "") const override;
  void load_state_dict(const std::map<std::string, Tensor>& tensors,
                       const std::string& prefix = "") override;

  double momentum;
  bool nesterov;

 private:
  std::map<const void*, Tensor> momentum_buffer_;  // by Tensor::id()
};

/// AdamW's betas and eps: timm's --opt-betas and --opt-eps, torch's defaults when unset.
struct AdamSettings {
  double beta1 = kTorchAdamBeta1, beta2 = kTorchAdamBeta2, eps = kTorchAdamEps;
};

/// `cfg`'s opt_betas and opt_eps (torch's defaults unless set). Throws hg::Error unless opt_betas
/// holds two numbers (validate() checks that).
AdamSettings adam_settings(const Config& cfg);

/// The optimizer of timm's name `name`: "adamw" (AdamW with `adam`'s betas and eps), "sgd" or
/// "nesterov" (SGD with Nesterov momentum, as timm's "sgd" and "nesterov"), "momentum" (SGD with
/// classical momentum). The SGDs do not read `adam`.
/// Throws hg::Error naming `name` otherwise, for "sgd" with momentum 0 (Nesterov needs it), or
/// for betas outside [0, 1) or eps < 0 (AdamW's constructor).
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::vector<ParamGroup> groups,
                                          double momentum, const AdamSettings& adam = {});

/// torch.nn.utils.clip_grad_norm_(params, max_norm): total = L2 norm of all defined gradients
/// (as if concatenated); every gradient is multiplied by min(max_norm / (total + 1e-6), 1).
/// Returns total as a one-element tensor on the gradients' device (no host sync on CUDA; .item()
/// to read it), dtype of the gradients. All gradients must share device and dtype.
/// Throws hg::Error unless max_norm > 0 or on mixed devices / dtypes. No gradients: returns 0.
Tensor clip_grad_norm(const std::vector<Tensor>& params, double max_norm);

/// clip_grad_norm(opt.parameters(), max_norm) for opt's next step: fused into that step where
/// the optimizer can (Optimizer::clip_in_next_step: AdamW on CUDA), else clip_grad_norm now.
/// Throws hg::Error unless max_norm > 0.
void clip_gradients(Optimizer& opt, double max_norm);

}  // namespace hg::train
