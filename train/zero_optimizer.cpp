// ZeRO-1: sharded AdamW / SGD state over the gradient buckets' chunks (see zero_optimizer.h).
#include "train/zero_optimizer.h"

#include <cmath>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/memory.h"
#include "dist/collectives.h"
#include "dist/process_group.h"
#include "kernels/optimizer.h"
#include "kernels/reduce.h"

namespace hg::train {
namespace {

// The parameter as a flat view (not recorded: callers hold a NoGradGuard).
Tensor flat_view(const Tensor& p) { return p.reshape({p.numel()}); }

// Elements [lo, hi) of this rank's chunk of `b` (bucket coordinates), as a view of `t` whose
// element 0 is the chunk's first element.
Tensor chunk_slice(const Tensor& t, const GradBucket& b, const ChunkRange& c) {
  const int64_t base = static_cast<int64_t>(dist::rank()) * b.chunk();
  return t.slice(0, c.lo - base, c.hi - base);
}

}  // namespace

ZeroOptimizer::ZeroOptimizer(const Optimizer& inner, std::vector<Tensor> params,
                             std::shared_ptr<std::vector<GradBucket>> buckets)
    : Optimizer(inner.param_groups()), params_(std::move(params)), buckets_(std::move(buckets)) {
  if (const auto* a = dynamic_cast<const AdamW*>(&inner)) {
    kind_ = Kind::adamw;
    beta1_ = a->beta1;
    beta2_ = a->beta2;
    eps_ = a->eps;
  } else if (const auto* s = dynamic_cast<const SGD*>(&inner)) {
    kind_ = Kind::sgd;
    momentum_ = s->momentum;
    nesterov_ = s->nesterov;
  } else {
    throw Error("zero_stage 1: only AdamW and SGD can be sharded");
  }
  info_.resize(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) index_of_[params_[i].id()] = i;
  std::vector<bool> in_bucket(params_.size(), false);
  for (size_t b = 0; b < buckets_->size(); ++b)
    for (size_t j = 0; j < (*buckets_)[b].entries.size(); ++j) {
      const size_t p = (*buckets_)[b].entries[j].param;
      info_.at(p).bucket = b;
      info_.at(p).entry = j;
      in_bucket.at(p) = true;
    }
  for (size_t g = 0; g < groups_.size(); ++g)
    for (size_t i = 0; i < groups_[g].params.size(); ++i) {
      auto it = index_of_.find(groups_[g].params[i].id());
      HG_CHECK(it != index_of_.end() && in_bucket[it->second], "zero_stage 1: parameter ", param_name(g, i),
               " is in no gradient bucket");
      info_[it->second].group = g;
      info_[it->second].name = param_name(g, i);
    }
  {
    memory::CategoryScope scope(Category::optimizer_state);
    for (const GradBucket& b : *buckets_) {
      std::vector<Tensor> states;
      for (size_t s = 0; s < state_names().size(); ++s)
        states.push_back(Tensor::zeros({b.chunk()}, b.flat.dtype(), b.flat.device()));
      shards_.push_back(std::move(states));
    }
  }
  std::map<std::string, Tensor> state;
  for (auto& [k, t] : inner.state_dict("")) state.emplace(k, t);
  load_state_dict(state, "");
}

std::vector<std::string> ZeroOptimizer::state_names() const {
  if (kind_ == Kind::adamw) return {"exp_avg", "exp_avg_sq"};
  if (momentum_ != 0) return {"momentum_buffer"};
  return {};
}

int64_t ZeroOptimizer::state_bytes() const {
  int64_t n = 0;
  for (const auto& states : shards_)
    for (const Tensor& t : states) n += static_cast<int64_t>(t.nbytes());
  return n;
}

void ZeroOptimizer::step() {
  autograd::NoGradGuard no_grad;
  const int r = dist::rank();
  for (size_t bi = 0; bi < buckets_->size(); ++bi) {
    GradBucket& b = (*buckets_)[bi];
    for (const BucketEntry& e : b.entries) {
      ParamInfo& pi = info_[e.param];
      pi.step += 1;
      const ChunkRange c = chunk_part(b, e, r);
      if (c.empty()) continue;
      const Tensor& p = params_[e.param];
      const ParamGroup& grp = groups_[pi.group];
      HG_CHECK(p.device() == Device::cpu || p.dtype() == DType::f32, "zero_stage 1: parameter ", pi.name, " ",
               p.describe(), ": CUDA updates are f32");
      // the three (or two) arrays of this part: parameter, averaged gradient, state
      Tensor pv = flat_view(p).slice(0, c.lo - e.offset, c.hi - e.offset);
      Tensor gv = b.flat.slice(0, c.lo, c.hi);
      const int64_t n = c.hi - c.lo;
      if (kind_ == Kind::adamw) {
        Tensor m = chunk_slice(shard(bi, 0), b, c), v = chunk_slice(shard(bi, 1), b, c);
        const kernels::AdamWHyper h{grp.lr, beta1_, beta2_, eps_, grp.weight_decay,
                                    1.0 - std::pow(beta1_, static_cast<double>(pi.step)),
                                    1.0 - std::pow(beta2_, static_cast<double>(pi.step))};
        if (p.device() == Device::cuda) {
          kernels::cuda::adamw_update(pv.data<float>(), gv.data<float>(), m.data<float>(),
                                      v.data<float>(), n, h);
        } else {
          HG_DISPATCH_FLOAT(p.dtype(), "ZeRO-1 AdamW", [&] {
            kernels::cpu::adamw_update(pv.data<scalar_t>(), gv.data<scalar_t>(), m.data<scalar_t>(),
                                       v.data<scalar_t>(), n, h);
          });
        }
      } else {
        Tensor buf = momentum_ != 0 ? chunk_slice(shard(bi, 0), b, c) : Tensor();
        const kernels::SGDHyper h{grp.lr, momentum_, grp.weight_decay, nesterov_, pi.step == 1};
        if (p.device() == Device::cuda) {
          kernels::cuda::sgd_update(pv.data<float>(), gv.data<float>(),
                                    buf.defined() ? buf.data<float>() : nullptr, n, h);
        } else {
          HG_DISPATCH_FLOAT(p.dtype(), "ZeRO-1 SGD", [&] {
            kernels::cpu::sgd_update(pv.data<scalar_t>(), gv.data<scalar_t>(),
                                     buf.defined() ? buf.data<scalar_t>() : nullptr, n, h);
          });
        }
      }
    }
  }
  // All-gather the parameters through the bucket buffers: this rank's updated parts into its
  // chunks, one collective per bucket (all in flight together), then every parameter from its slice.
  std::vector<dist::Work> gathers;
  for (size_t bi = 0; bi < buckets_->size(); ++bi) {
    GradBucket& b = (*buckets_)[bi];
    for (const BucketEntry& e : b.entries) {
      const ChunkRange c = chunk_part(b, e, r);
      if (!c.empty())
        b.flat.slice(0, c.lo, c.hi).copy_(flat_view(params_[e.param]).slice(0, c.lo - e.offset, c.hi - e.offset));
    }
    gathers.push_back(dist::all_gather(b.flat, str("ZeRO-1 all-gather of the parameters, bucket ", bi)));
  }
  for (size_t bi = 0; bi < buckets_->size(); ++bi) {
    gathers[bi].wait();
    GradBucket& b = (*buckets_)[bi];
    for (const BucketEntry& e : b.entries)
      flat_view(params_[e.param]).copy_(b.flat.slice(0, e.offset, e.offset + e.numel));
    b.flat.zero_();  // the buffer holds the gradients again
  }
}

double ZeroOptimizer::clip_grad_norm(double max_norm) {
  HG_CHECK(max_norm > 0, "clip_grad_norm: max_norm must be > 0, got ", max_norm);
  autograd::NoGradGuard no_grad;
  const int r = dist::rank();
  // this rank's gradient elements: chunk r of each bucket, without the padding
  std::vector<Tensor> parts;
  for (GradBucket& b : *buckets_) {
    const int64_t lo = static_cast<int64_t>(r) * b.chunk(), hi = std::min(lo + b.chunk(), b.numel);
    if (hi > lo) parts.push_back(b.flat.slice(0, lo, hi));
  }
  double local = 0;
  if (!parts.empty() && parts[0].device() == Device::cuda) {
    std::vector<const float*> ptrs;
    std::vector<int64_t> sizes;
    for (const Tensor& t : parts) {
      ptrs.push_back(t.data<float>());
      sizes.push_back(t.numel());
    }
    Tensor ss = Tensor::empty({}, DType::f32, Device::cuda);
    kernels::cuda::sum_squares(ptrs, sizes, ss.data<float>());
    local = ss.item();
  } else {
    for (const Tensor& t : parts)
      HG_DISPATCH_FLOAT(t.dtype(), "clip_grad_norm", [&] { local += kernels::cpu::sum_squares(t.data<scalar_t>(), t.numel()); });
  }
  const double total = std::sqrt(dist::sum({local}, "ZeRO-1 gradient norm (clip_grad)")[0]);
  for (const Tensor& t : parts) {
    if (t.device() == Device::cuda) {
      Tensor norm = Tensor::full({}, total, DType::f32, Device::cuda);
      kernels::cuda::clip_scale(t.data<float>(), t.numel(), norm.data<float>(), max_norm);
    } else {
      HG_DISPATCH_FLOAT(t.dtype(), "clip_grad_norm", [&] {
        const auto norm = static_cast<scalar_t>(total);
        kernels::cpu::clip_scale(t.data<scalar_t>(), t.numel(), &norm, max_norm);
      });
    }
  }
  return total;
}

std::vector<std::pair<std::string, Tensor>> ZeroOptimizer::state_dict(const std::string& prefix) const {
  autograd::NoGradGuard no_grad;
  const std::vector<std::string> names = state_names();
  std::map<std::string, Tensor> full;  // key -> tensor, filled on rank 0
  for (size_t bi = 0; bi < buckets_->size(); ++bi) {
    const GradBucket& b = (*buckets_)[bi];
    const int64_t base = static_cast<int64_t>(dist::rank()) * b.chunk();
    for (size_t s = 0; s < names.size(); ++s) {
      Tensor all;
      {
        memory::CategoryScope scope(Category::workspace);
        all = Tensor::zeros({b.padded}, b.flat.dtype(), b.flat.device());
      }
      all.slice(0, base, base + b.chunk()).copy_(shards_[bi][s]);
      dist::all_gather(all, str("ZeRO-1 gather of the optimizer state, bucket ", bi)).wait();
      if (!dist::is_main()) continue;
      for (const BucketEntry& e : b.entries) {
        const ParamInfo& pi = info_[e.param];
        if (pi.step == 0) continue;  // no state yet (as AdamW / SGD before their first step)
        Tensor v = all.slice(0, e.offset, e.offset + e.numel).reshape(params_[e.param].shape());
        full[pi.name + "." + names[s]] = v.device() == Device::cpu ? v.clone() : v.to(Device::cpu);
      }
    }
  }
  std::vector<std::pair<std::string, Tensor>> out;
  if (!dist::is_main()) return out;
  for (size_t g = 0; g < groups_.size(); ++g)  // AdamW's / SGD's order: groups, then state names
    for (size_t i = 0; i < groups_[g].params.size(); ++i) {
      const ParamInfo& pi = info_[index_of_.at(groups_[g].params[i].id())];
      if (pi.step == 0) continue;
      for (const std::string& s : names) out.emplace_back(prefix + pi.name + "." + s, full.at(pi.name + "." + s));
      if (kind_ == Kind::adamw)
        out.emplace_back(prefix + pi.name + ".step", Tensor::from_vector<int64_t>({}, {pi.step}));
    }
  return out;
}

void ZeroOptimizer::load_state_dict(const std::map<std::string, Tensor>& tensors, const std::string& prefix) {
  autograd::NoGradGuard no_grad;
  std::vector<std::string> suffixes = state_names();
  if (kind_ == Kind::adamw) suffixes.push_back("step");
  if (suffixes.empty()) return;  // SGD without momentum has no state
  const int r = dist::rank();
  load_named(tensors, prefix, suffixes, [&](const Tensor& p, std::map<std::string, Tensor>& t) {
    ParamInfo& pi = info_[index_of_.at(p.id())];
    const GradBucket& b = (*buckets_)[pi.bucket];
    const BucketEntry& e = b.entries[pi.entry];
    const ChunkRange c = chunk_part(b, e, r);
    const std::vector<std::string> names = state_names();
    for (size_t s = 0; s < names.size(); ++s) {
      const Tensor& src = t[names[s]];  // its shape checked by load_named
      if (!c.empty())
        chunk_slice(shard(pi.bucket, static_cast<int>(s)), b, c)
            .copy_(src.contiguous().reshape({src.numel()}).slice(0, c.lo - e.offset, c.hi - e.offset));
    }
    if (kind_ == Kind::adamw) {
      pi.step = static_cast<int64_t>(t["step"].item());
    } else {
      pi.step = 1;  // momentum started
    }
  });
}

}  // namespace hg::train
