// ZeRO stage 1 (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
// Models", 2020): the optimizer state is sharded over the ranks. Every rank keeps all parameters
// and full-size gradient buckets (train/grad_buckets.h), but only the state of its chunk of each
// bucket: 1/R of AdamW's exp_avg / exp_avg_sq (SGD's momentum) per rank.
//
// One update: during the backward each bucket is reduce-scattered (DataParallel), so chunk r of
// every bucket holds the rank-averaged gradients of rank r's elements; step() updates those
// elements of the parameters with the same formulas as AdamW / SGD (kernels/optimizer.h, the
// parameter's group lr and weight decay), then all-gathers the updated parameters bucket by bucket
// (staged through the bucket buffers, which are zeroed afterwards) so every rank holds them all.
//
// Checkpoints hold the full state under AdamW's / SGD's own keys ("<name>.exp_avg", ...):
// state_dict() gathers the shards (a collective: every rank calls it; rank 0 gets the tensors, in
// CPU memory), load_state_dict() takes each rank's part of the full tensors. So a checkpoint of N
// ranks, with or without ZeRO, resumes on M ranks, with or without ZeRO.
#pragma once

#include <memory>
#include <vector>

#include "train/grad_buckets.h"
#include "train/optimizer.h"

namespace hg::train {

class ZeroOptimizer : public Optimizer {
 public:
  /// Takes `inner`'s groups, hyper-parameters and state (an AdamW or an SGD; anything else throws
  /// hg::Error). `params` and `buckets` are DataParallel's (the buckets' flat gradient buffers
  /// attached); every parameter of the groups must be in a bucket.
  ZeroOptimizer(const Optimizer& inner, std::vector<Tensor> params, std::shared_ptr<std::vector<GradBucket>> buckets);

  /// Updates this rank's chunks and all-gathers the parameters (a collective). Every parameter
  /// counts a step (their gradients are bucket views, always defined).
  void step() override;
  /// clip_grad_norm over all ranks' chunks (a collective): the global L2 norm of the averaged
  /// gradients, then this rank's chunks scaled by min(max_norm / (norm + 1e-6), 1). Returns the norm.
  double clip_grad_norm(double max_norm);

  /// Collective (see the file comment): the full state on rank 0 (CPU tensors), empty elsewhere.
  std::vector<std::pair<std::string, Tensor>> state_dict(const std::string& prefix = "") const override;
  void load_state_dict(const std::map<std::string, Tensor>& tensors, const std::string& prefix = "") override;

  /// Bytes of optimizer state this rank holds (for the memory report and tests).
  int64_t state_bytes() const;

 private:
  enum class Kind { adamw, sgd };
  struct ParamInfo {
    size_t group = 0;
    std::string name;
    int64_t step = 0;        ///< AdamW: updates so far (bias correction); SGD: > 0 once momentum started
    size_t bucket = 0, entry = 0;
  };
  // The state chunk of one bucket for `which` (0: exp_avg / momentum_buffer, 1: exp_avg_sq).
  Tensor& shard(size_t bucket, int which) { return shards_[bucket][static_cast<size_t>(which)]; }
  std::vector<std::string> state_names() const;

  Kind kind_;
  double beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8, momentum_ = 0;
  bool nesterov_ = false;
  std::vector<Tensor> params_;
  std::shared_ptr<std::vector<GradBucket>> buckets_;
  std::vector<ParamInfo> info_;                 // by index into params_
  std::vector<std::vector<Tensor>> shards_;     // [bucket][state] (chunk,) tensors, optimizer_state memory
  std::map<const void*, size_t> index_of_;      // Tensor::id() -> index into params_
};

}  // namespace hg::train
