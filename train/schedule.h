// Learning-rate schedule: timm's CosineLRScheduler with linear warmup (its defaults: one cycle, no
// k-decay, no noise, warmup_prefix false), stepped per epoch or per optimizer update
// (sched_on_updates).
//
//   t < warmup_t:  lr(t) = warmup_lr + t * (lr - warmup_lr) / warmup_t
//   otherwise:     lr(t) = min_lr + 0.5 * (lr - min_lr) * (1 + cos(pi * t / t_total))
//   after t_total: min_lr
// with t, warmup_t and t_total in epochs, or in updates when stepping per update. "none" keeps lr.
// The warmup replaces the cosine's start (timm): at t = warmup_t the lr is already
// min_lr + 0.5 (lr - min_lr)(1 + cos(pi warmup_t / t_total)), a little below lr. (ConvNeXt's own
// code runs the cosine over t_total - warmup_t after the warmup instead, as timm's warmup_prefix
// does over t_total after it; neither is this schedule.)
//
// RunSchedule is the lr of a whole run: the config's schedule, or, for the positions before a
// resume changed it, the earlier schedule recorded in schedule_history (train/config.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/config.h"

namespace hg::train {

struct LrSchedule {
  std::string kind = "cosine";  ///< "cosine" | "none"
  double lr = 1e-3, warmup_lr = 1e-5, min_lr = 0.0;
  double warmup_t = 0;  ///< warmup length (epochs or updates)
  double t_total = 1;   ///< schedule length (epochs or updates)

  /// Learning rate at time t (epoch index or update index, starting at 0).
  double at(double t) const;
};

/// Optimizer updates in an epoch of `steps` micro-batches, `accum` to an update: ceil(steps /
/// accum), the last micro-batches making an update even when fewer than accum (timm's train.py).
int64_t updates_per_epoch(int64_t steps, int64_t accum);

/// The micro-batches of the update that micro-batch `step` (0-based) of such an epoch belongs to:
/// accum, or the remainder for the epoch's last, partial update. Each micro-batch's loss is
/// divided by it, so an update follows the mean loss of its own micro-batches (timm).
int64_t micro_batches_of_update(int64_t step, int64_t steps, int64_t accum);

class RunSchedule {
 public:
  /// `updates_per_epoch` (>= 1) converts epochs to updates when a schedule steps per update.
  RunSchedule(const Config& cfg, int64_t updates_per_epoch);

  /// The lr of the optimizer update made after micro-batch `step` (0-based) of epoch `epoch`
  /// (0-based), with `updates` updates made before it in the run.
  double lr(int64_t epoch, int64_t step, int64_t updates) const;

  /// The lr that the scheduler in effect at micro-batch `last_step` (0-based, the epoch's last) of
  /// epoch `epoch` sets after that update, `updates` being the run's updates by then: timm's
  /// summary.csv value. Stepped per update, the next update's lr; stepped per epoch, the epoch's
  /// own (timm steps such a schedule after the summary). Each by that part of the run's schedule,
  /// sched_on_updates included: unlike lr(epoch + 1, 0, updates), or the lr a resume into the
  /// epoch's evaluation set by its new schedule, it comes from the schedule the epoch ran even
  /// where a resume changed it at the epoch's end, so a rerun of the resumed run's args.yaml
  /// records the row the run did.
  double lr_set_after(int64_t epoch, int64_t last_step, int64_t updates) const;

 private:
  struct Part {
    int64_t until_epoch, until_step;  // used for positions before this one
    LrSchedule schedule;
    bool on_updates;
  };
  std::vector<Part> parts_;  // schedule_history, then the config's own (open-ended) schedule
  const Part& part_at(int64_t epoch, int64_t step) const;  // the part that covers a position
};

}  // namespace hg::train
