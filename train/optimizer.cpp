// AdamW, SGD, parameter groups and gradient clipping (see optimizer.h).
#include "train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <set>

#include "core/memory.h"
#include "kernels/optimizer.h"
#include "kernels/reduce.h"
#include "train/config.h"

namespace hg::train {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// out[0] = the global L2 norm of CUDA f32 dense gradients (one launch per 256 chunks, then one).
void cuda_grad_norm(const std::vector<Tensor>& grads, float* out) {
  std::vector<const float*> ptrs;
  std::vector<int64_t> sizes;
  for (const Tensor& g : grads) {
    ptrs.push_back(g.data<float>());
    sizes.push_back(g.numel());
  }
  kernels::cuda::l2_norm(ptrs, sizes, out);  // 0 without gradients
}

// A zero tensor shaped like p, in optimizer-state memory.
Tensor state_like(const Tensor& p) {
  memory::CategoryScope scope(Category::optimizer_state);
  return Tensor::zeros(p.shape(), p.dtype(), p.device());
}

// A loaded state tensor `key` of parameter p, checked for what a step can leave: a step count is
// a whole number in [0, 2^53) (it is cast to an integer), a moment p's shape and finite, a second
// moment (exp_avg_sq) >= 0. A damaged file's values would make the first update NaN.
void check_state_tensor(const std::string& key, const Tensor& t, const Tensor& p) {
  if (ends_with(key, ".step")) {
    const double v = t.numel() == 1 ? t.item() : -1;
    HG_CHECK(t.numel() == 1 && v >= 0 && v < 0x1p53 && v == std::floor(v), "optimizer state: '",
             key, "' must be one step count, a whole number >= 0 and < 2^53, got ",
             t.numel() == 1 ? str(std::setprecision(17), v) : t.describe());
    return;
  }
  HG_CHECK(t.shape() == p.shape(), "optimizer state: '", key, "' ", t.describe(),
           " does not match its parameter ", p.describe());
  const bool squares = ends_with(key, ".exp_avg_sq");
  for (double v : t.to_vector<double>())
    HG_CHECK(std::isfinite(v) && (!squares || v >= 0), "optimizer state: '", key, "' holds ", v,
             squares ? ", not a finite number >= 0" : ", not a finite number",
             " (the file was damaged or edited)");
}

// The parameter and its gradient, checked for an in-place update.
void check_update(const char* opt, const std::string& name, const Tensor& p, const Tensor& g) {
  HG_CHECK(p.is_contiguous(), opt, ": parameter ", name, " ", p.describe(), " is not contiguous");
  HG_CHECK(g.shape() == p.shape() && g.dtype() == p.dtype() && g.device() == p.device(), opt,
           ": gradient ", g.describe(), " does not match parameter ", name, " ", p.describe());
  HG_CHECK(p.device() == Device::cpu || p.dtype() == DType::f32, opt, ": parameter ", name, " ",
           p.describe(), ": CUDA updates are f32");
}

}  // namespace

// ---- groups ------------------------------------------------------------------------------------

bool no_weight_decay(const ParamRef& p) {
  return p.no_weight_decay || p.tensor.ndim() <= 1 || ends_with(p.name, ".bias") ||
         ends_with(p.name, "gamma") || p.name.find("scale") != std::string::npos;
}

std::vector<ParamGroup> param_groups_weight_decay(const std::vector<ParamRef>& params, double lr,
                                                  double weight_decay) {
  ParamGroup decay{{}, {}, lr, weight_decay}, no_decay{{}, {}, lr, 0.0};
  for (const ParamRef& p : params) {
    if (!p.trainable) continue;
    ParamGroup& g = no_weight_decay(p) ? no_decay : decay;
    g.params.push_back(p.tensor);
    g.names.push_back(p.name);
  }
  std::vector<ParamGroup> out;
  if (!decay.params.empty()) out.push_back(std::move(decay));
  if (!no_decay.params.empty()) out.push_back(std::move(no_decay));
  return out;
}

// ---- Optimizer ---------------------------------------------------------------------------------

Optimizer::Optimizer(std::vector<ParamGroup> groups) : groups_(std::move(groups)) {
  std::set<const void*> seen;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const ParamGroup& grp = groups_[g];
    HG_CHECK(grp.names.empty() || grp.names.size() == grp.params.size(), "optimizer: group ", g,
             " has ", grp.params.size(), " parameters but ", grp.names.size(), " names");
    HG_CHECK(grp.lr >= 0 && grp.weight_decay >= 0, "optimizer: group ", g, ": lr ", grp.lr,
             " and weight_decay ", grp.weight_decay, " must be >= 0");
    for (size_t i = 0; i < grp.params.size(); ++i) {
      HG_CHECK(grp.params[i].defined(), "optimizer: parameter ", param_name(g, i), " is undefined");
      HG_CHECK(seen.insert(grp.params[i].id()).second, "optimizer: parameter ", param_name(g, i),
               " appears twice");
    }
  }
}

std::string Optimizer::param_name(size_t g, size_t i) const {
  const ParamGroup& grp = groups_[g];
  return grp.names.empty() ? str("group", g, ".", i) : grp.names[i];
}

template <typename F>
void Optimizer::for_each_param(F&& f) const {
  for (size_t g = 0; g < groups_.size(); ++g)
    for (size_t i = 0; i < groups_[g].params.size(); ++i)
      f(param_name(g, i), groups_[g].params[i], groups_[g]);
}

void Optimizer::zero_grad() {
  for (const ParamGroup& grp : groups_)
    for (const Tensor& p : grp.params) p.zero_grad();
}

void Optimizer::set_lr(double lr) {
  for (ParamGroup& grp : groups_) grp.lr = lr * grp.lr_scale;
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (const ParamGroup& grp : groups_) out.insert(out.end(), grp.params.begin(), grp.params.end());
  return out;
}

void Optimizer::load_named(
    const std::map<std::string, Tensor>& tensors, const std::string& prefix,
    const std::vector<std::string>& suffixes,
    const std::function<void(const Tensor&, std::map<std::string, Tensor>&)>& load) {
  std::set<std::string> used;
  std::vector<std::string> without;  // parameters the tensors hold no state for
  int64_t with = 0;
  for_each_param([&](const std::string& name, const Tensor& p, const ParamGroup&) {
    std::map<std::string, Tensor> found;
    for (const std::string& s : suffixes) {
      auto it = tensors.find(prefix + name + "." + s);
      if (it != tensors.end()) found[s] = it->second;
    }
    if (found.empty()) {
      without.push_back(name);
      return;
    }
    ++with;
    for (const std::string& s : suffixes) {
      HG_CHECK(found.count(s), "optimizer state: '", prefix + name + "." + s,
               "' is missing (its companions are present)");
      check_state_tensor(prefix + name + "." + s, found[s], p);
    }
    for (const std::string& s : suffixes) used.insert(prefix + name + "." + s);
    load(p, found);
  });
  for (const auto& [key, t] : tensors)
    HG_CHECK(key.compare(0, prefix.size(), prefix) != 0 || used.count(key),
             "optimizer state: key '", key, "' names no parameter state of this optimizer");
  // A step gives every parameter its state, so a file with some has all: part of it would resume
  // those parameters' moments from zero, unsaid (an edited file, or another program's)
  HG_CHECK(with == 0 || without.empty(), "optimizer state: ", without.size(), " of the ",
           with + int64_t(without.size()), " parameters have none (the first: '", prefix,
           without.empty() ? "" : without.front(),
           ".*'), the others have theirs: the file's "
           "optimizer state is incomplete");
}

// ---- AdamW -------------------------------------------------------------------------------------

AdamW::AdamW(std::vector<ParamGroup> groups, double b1, double b2, double e)
    : Optimizer(std::move(groups)), beta1(b1), beta2(b2), eps(e) {
  HG_CHECK(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1, "AdamW: betas (", b1, ", ", b2,
           ") must be in [0, 1)");
  HG_CHECK(e >= 0, "AdamW: eps must be >= 0, got ", e);
}

void AdamW::step() {
  try {
    prepare_step();
  } catch (...) {
    clip_armed_ = false;  // an armed clip belongs to this step only, even a failed one
    throw;
  }
  queue_step();
}

void AdamW::prepare_step() {
  // CUDA tensors are updated together by queue_step (one launch per 256 chunks: a launch per
  // tensor made the step launch-bound); keep_ holds the contiguous gradients until then.
  on_gpu_.clear();
  keep_.clear();
  for_each_param([&](const std::string& name, const Tensor& p, const ParamGroup& grp) {
    const Tensor g_raw = p.grad();
    if (!g_raw.defined()) return;
    const Tensor g = g_raw.contiguous();
    check_update("AdamW", name, p, g);
    State& s = state_[p.id()];
    if (!s.exp_avg.defined()) {
      s.exp_avg = state_like(p);
      s.exp_avg_sq = state_like(p);
    }
    s.step += 1;
    const kernels::AdamWHyper h{grp.lr,
                                beta1,
                                beta2,
                                eps,
                                grp.weight_decay,
                                1.0 - std::pow(beta1, static_cast<double>(s.step)),
                                1.0 - std::pow(beta2, static_cast<double>(s.step))};
    if (p.device() == Device::cuda) {
      on_gpu_.push_back({p.data<float>(), s.exp_avg.data<float>(), s.exp_avg_sq.data<float>(),
                         g.data<float>(), p.numel(), h});
      keep_.push_back(g);
    } else {
      HG_DISPATCH_FLOAT(p.dtype(), "AdamW", [&] {
        kernels::cpu::adamw_update(p.data<scalar_t>(), g.data<scalar_t>(),
                                   s.exp_avg.data<scalar_t>(), s.exp_avg_sq.data<scalar_t>(),
                                   p.numel(), h);
      });
    }
  });
  if (on_gpu_.empty()) return;
  // This step's table through page-locked memory into a buffer that stays at one address (a
  // captured graph reads it there); the copy is queued before the update reads it.
  const std::vector<float> table = kernels::adamw_multi_hyper(on_gpu_);
  const auto n = static_cast<int64_t>(table.size());
  if (!hyper_.defined() || hyper_.numel() != n) {
    memory::CategoryScope scope(Category::optimizer_state);
    hyper_ = Tensor::empty({n}, DType::f32, Device::cuda);
  }
  Tensor staged = Tensor::empty_pinned({n}, DType::f32);
  std::copy(table.begin(), table.end(), staged.data<float>());
  hyper_.copy_(staged);
}

void AdamW::queue_step() {
  const bool clip = clip_armed_;
  clip_armed_ = false;  // one step's: the next one is armed again (or replayed from a graph)
  if (on_gpu_.empty()) return;
  kernels::cuda::adamw_update_multi(on_gpu_, hyper_.data<float>(),
                                    clip ? clip_norm_.data<float>() : nullptr, clip_max_);
}

std::vector<const void*> AdamW::queue_signature() const {
  std::vector<const void*> sig;
  for (const kernels::AdamWTensor& t : on_gpu_) sig.insert(sig.end(), {t.p, t.m, t.v, t.g});
  if (hyper_.defined()) sig.push_back(hyper_.data_ptr());
  if (clip_norm_.defined()) sig.push_back(clip_norm_.data_ptr());
  return sig;
}

bool AdamW::clip_in_next_step(double max_norm) {
  HG_CHECK(max_norm > 0, "clip_grad_norm: max_norm must be > 0, got ", max_norm);
  std::vector<Tensor> grads;
  bool fusable = true;  // else clip_grad_norm clips (and says what is wrong, if anything)
  for_each_param([&](const std::string&, const Tensor& p, const ParamGroup&) {
    const Tensor g = p.grad();
    fusable = fusable && p.device() == Device::cuda && p.dtype() == DType::f32 &&
              (!g.defined() || (g.dtype() == DType::f32 && g.is_contiguous()));
    if (fusable && g.defined()) grads.push_back(g);
  });
  if (!fusable) return false;
  if (!clip_norm_.defined()) {
    memory::CategoryScope scope(Category::optimizer_state);
    clip_norm_ = Tensor::empty({}, DType::f32, Device::cuda);
  }
  cuda_grad_norm(grads, clip_norm_.data<float>());
  clip_max_ = max_norm;
  clip_armed_ = true;
  return true;
}

std::vector<std::pair<std::string, Tensor>> AdamW::state_dict(const std::string& prefix) const {
  std::vector<std::pair<std::string, Tensor>> out;
  for_each_param([&](const std::string& name, const Tensor& p, const ParamGroup&) {
    auto it = state_.find(p.id());
    if (it == state_.end() || !it->second.exp_avg.defined()) return;
    out.emplace_back(prefix + name + ".exp_avg", it->second.exp_avg);
    out.emplace_back(prefix + name + ".exp_avg_sq", it->second.exp_avg_sq);
    out.emplace_back(prefix + name + ".step", Tensor::from_vector<int64_t>({}, {it->second.step}));
  });
  return out;
}

void AdamW::load_state_dict(const std::map<std::string, Tensor>& tensors,
                            const std::string& prefix) {
  load_named(tensors, prefix, {"exp_avg", "exp_avg_sq", "step"},
             [&](const Tensor& p, std::map<std::string, Tensor>& t) {
               State s;
               s.exp_avg = state_like(p);
               s.exp_avg_sq = state_like(p);
               s.exp_avg.copy_(t["exp_avg"]);
               s.exp_avg_sq.copy_(t["exp_avg_sq"]);
               s.step = static_cast<int64_t>(t["step"].item());
               state_[p.id()] = s;
             });
}

// ---- SGD ---------------------------------------------------------------------------------------

SGD::SGD(std::vector<ParamGroup> groups, double m, bool n)
    : Optimizer(std::move(groups)), momentum(m), nesterov(n) {
  HG_CHECK(m >= 0, "SGD: momentum must be >= 0, got ", m);
  HG_CHECK(!n || m > 0, "SGD: nesterov needs momentum > 0");
}

void SGD::step() {
  for_each_param([&](const std::string& name, const Tensor& p, const ParamGroup& grp) {
    const Tensor g_raw = p.grad();
    if (!g_raw.defined()) return;
    const Tensor g = g_raw.contiguous();
    check_update("SGD", name, p, g);
    Tensor buf;
    bool first = false;
    if (momentum != 0) {
      Tensor& b = momentum_buffer_[p.id()];
      if (!b.defined()) {
        b = state_like(p);
        first = true;
      }
      buf = b;
    }
    const kernels::SGDHyper h{grp.lr, momentum, grp.weight_decay, nesterov, first};
    if (p.device() == Device::cuda) {
      kernels::cuda::sgd_update(p.data<float>(), g.data<float>(),
                                buf.defined() ? buf.data<float>() : nullptr, p.numel(), h);
    } else {
      HG_DISPATCH_FLOAT(p.dtype(), "SGD", [&] {
        kernels::cpu::sgd_update(p.data<scalar_t>(), g.data<scalar_t>(),
                                 buf.defined() ? buf.data<scalar_t>() : nullptr, p.numel(), h);
      });
    }
  });
}

std::vector<std::pair<std::string, Tensor>> SGD::state_dict(const std::string& prefix) const {
  std::vector<std::pair<std::string, Tensor>> out;
  for_each_param([&](const std::string& name, const Tensor& p, const ParamGroup&) {
    auto it = momentum_buffer_.find(p.id());
    if (it != momentum_buffer_.end() && it->second.defined())
      out.emplace_back(prefix + name + ".momentum_buffer", it->second);
  });
  return out;
}

void SGD::load_state_dict(const std::map<std::string, Tensor>& tensors, const std::string& prefix) {
  load_named(tensors, prefix, {"momentum_buffer"},
             [&](const Tensor& p, std::map<std::string, Tensor>& t) {
               Tensor b = state_like(p);
               b.copy_(t["momentum_buffer"]);
               momentum_buffer_[p.id()] = b;
             });
}

AdamSettings adam_settings(const Config& cfg) {
  HG_CHECK(cfg.opt_betas.size() == 2, "opt_betas: expected [beta1, beta2], got ",
           cfg.opt_betas.size(), " numbers");
  return AdamSettings{cfg.opt_betas[0], cfg.opt_betas[1], cfg.opt_eps};
}

// ---- by name -----------------------------------------------------------------------------------

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::vector<ParamGroup> groups,
                                          double momentum, const AdamSettings& adam) {
  if (name == "adamw")
    return std::make_unique<AdamW>(std::move(groups), adam.beta1, adam.beta2, adam.eps);
  if (name == "sgd" || name == "nesterov") {  // timm: both are SGD with Nesterov momentum
    HG_CHECK(momentum > 0, "opt ", name,
             " is SGD with Nesterov momentum (timm), which needs momentum > 0, ", "got ", momentum,
             "; opt momentum with momentum 0 is plain SGD");
    return std::make_unique<SGD>(std::move(groups), momentum, /*nesterov=*/true);
  }
  if (name == "momentum") return std::make_unique<SGD>(std::move(groups), momentum, false);
  throw Error(
      str("unknown optimizer '", name, "' (adamw, sgd, nesterov or momentum, as timm names them)"));
}

// ---- clipping ----------------------------------------------------------------------------------

void clip_gradients(Optimizer& opt, double max_norm) {
  if (!opt.clip_in_next_step(max_norm)) clip_grad_norm(opt.parameters(), max_norm);
}

Tensor clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  HG_CHECK(max_norm > 0, "clip_grad_norm: max_norm must be > 0, got ", max_norm);
  std::vector<Tensor> grads;
  for (const Tensor& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return Tensor::zeros({}, DType::f32, Device::cpu);
  const Device dev = grads[0].device();
  const DType dt = grads[0].dtype();
  for (const Tensor& g : grads) {
    HG_CHECK(g.device() == dev && g.dtype() == dt,
             "clip_grad_norm: gradients differ in device/dtype: ", grads[0].describe(), " vs ",
             g.describe());
    HG_CHECK(g.is_contiguous(), "clip_grad_norm: gradient ", g.describe(), " is not contiguous");
  }
  Tensor total = Tensor::empty({}, dt, dev);
  if (dev == Device::cuda) {
    HG_CHECK(dt == DType::f32, "clip_grad_norm: CUDA gradients must be f32, got ",
             grads[0].describe());
    cuda_grad_norm(grads, total.data<float>());
    for (const Tensor& g : grads)
      kernels::cuda::clip_scale(g.data<float>(), g.numel(), total.data<float>(), max_norm);
  } else {
    HG_DISPATCH_FLOAT(dt, "clip_grad_norm", [&] {
      double ss = 0;
      for (const Tensor& g : grads) ss += kernels::cpu::sum_squares(g.data<scalar_t>(), g.numel());
      total.data<scalar_t>()[0] = static_cast<scalar_t>(std::sqrt(ss));
      for (const Tensor& g : grads)
        kernels::cpu::clip_scale(g.data<scalar_t>(), g.numel(), total.data<scalar_t>(), max_norm);
    });
  }
  return total;
}

}  // namespace hg::train
