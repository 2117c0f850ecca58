// Data-parallel training: what `mpirun -np N haargrad train` adds to the training loop, as the few
// calls the trainer makes (train/trainer.cpp):
//
//   DataParallel dp(cfg, model, opt);             // after the model, the optimizer and any resume
//   dp.backward(loss, /*sync=*/last micro-step);  // instead of autograd::backward(loss)
//   dp.clip_and_step(*opt, cfg.clip_grad);        // instead of clip_grad_norm + opt->step()
//   dp.sum_over_ranks({...}); dp.any_rank(flag);  // global batch loss / images, Ctrl-C on any rank
//
// Inactive (one process, dist_force off) every call is exactly the single-process code. Active
// (world size > 1, or dist_force):
//  * rank 0's parameters are broadcast at construction, so every replica starts equal;
//  * gradients live in buckets of dist_bucket_mb MiB (train/grad_buckets.h), parameters taken in
//    reverse model order (the order the backward finishes them); an autograd hook
//    (GradSlot::on_grad_final) counts the gradients of each bucket, and when a bucket is complete
//    it is averaged over the ranks (all-reduce, or reduce-scatter with ZeRO-1) while the backward
//    goes on: on the GPU through NCCL on its own stream, on the CPU through MPI. Buckets start in
//    bucket order on every rank (a bucket waits for the ones before it), so every rank issues the
//    same collectives in the same order. With gradient accumulation only the last micro-step
//    (sync = true) reduces; the others accumulate locally;
//  * the averaged gradients are the same on every rank, so the optimizer step (AdamW / SGD, clip
//    included) gives the same parameters everywhere; dist_check_every = N compares a hash of every
//    parameter across ranks every N updates and stops the run naming the first that differs;
//  * zero_stage 1 replaces the optimizer by a ZeroOptimizer (train/zero_optimizer.h) that keeps
//    1/N of the state per rank;
//  * ranks > 0 draw their drop-path masks from their own stream (timm seeds each rank apart).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "dist/collectives.h"
#include "models/convnext.h"
#include "train/config.h"
#include "train/evaluate.h"
#include "train/grad_buckets.h"
#include "train/optimizer.h"

namespace hg::train {

class ZeroOptimizer;

/// Resuming on another number of ranks: a run recorded with batch_size B per rank on
/// `recorded_ranks` ranks takes B * recorded_ranks / ranks per rank for the same images per update.
/// Sets recorded.batch_size to that (so that a resume compares the global batch, and a checkpoint
/// of N ranks resumes on M ranks) and returns a sentence for the log; "" for the same rank count.
/// Throws hg::Error when the global batch does not split over `ranks` (the run cannot go on with
/// the same images per step), naming the rank counts that would.
std::string rescale_batch_for_ranks(Config& recorded, int64_t recorded_ranks, int64_t ranks);

class DataParallel {
 public:
  /// Sets up data parallelism for `model` (see the file comment); `opt` is replaced by a
  /// ZeroOptimizer for zero_stage 1. Collective when active: every rank constructs it.
  DataParallel(const Config& cfg, ConvNeXt& model, std::unique_ptr<Optimizer>& opt);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  bool active() const { return active_; }

  /// autograd::backward(loss); when active and `sync`, returns with every gradient averaged over
  /// the ranks (on the GPU: ordered before later work, without blocking the host).
  void backward(const Tensor& loss, bool sync);
  /// Gradient clipping (global norm over all ranks' gradients; none when !clip) and the optimizer
  /// step; every dist_check_every updates, the replicas are compared.
  void clip_and_step(Optimizer& opt, std::optional<double> clip);

  /// Element-wise sums over the ranks (identity when inactive).
  std::vector<double> sum_over_ranks(const std::vector<double>& values) const;
  /// True everywhere when `flag` is true on some rank (identity when inactive).
  bool any_rank(bool flag) const;
  /// A sharded evaluation's result (this rank's samples) -> the result over all ranks' samples, in
  /// place: loss, top-1, top-5 weighted by each rank's image count, images and nonfinite summed.
  void reduce_evaluation(EvalResult& ev) const;

  /// Throws hg::Error naming the first parameter whose bytes differ between rank 0 and another
  /// rank (a collective; also run every dist_check_every updates).
  void check_replicas_agree() const;

  /// Buckets planned (empty when inactive), for tests and the start-up log.
  const std::vector<GradBucket>& buckets() const { return *buckets_; }

 private:
  void on_grad_final(size_t bucket);
  void launch_ready_buckets(bool all);

  bool active_ = false;
  bool zero_ = false;
  bool sync_ = false;
  int64_t check_every_ = 0;
  int64_t updates_ = 0;
  std::vector<ParamRef> named_;  // trainable parameters in model order (hash check, names)
  std::vector<Tensor> params_;   // bucket order: reverse model order
  std::shared_ptr<std::vector<GradBucket>> buckets_;
  std::vector<int> pending_;  // per bucket: gradients not final yet in this backward
  size_t next_launch_ = 0;    // buckets [0, next_launch_) are in flight
  std::vector<dist::Work> works_;
  ZeroOptimizer* zero_opt_ = nullptr;  // owned by the trainer's optimizer pointer
};

}  // namespace hg::train
