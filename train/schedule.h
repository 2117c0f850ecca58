// Learning-rate schedules: timm's schedulers as its create_scheduler_v2 makes them from train.py's
// keys (one cycle, no k-decay, no noise), stepped per epoch or per optimizer update
// (sched_on_updates). With t, warmup_t, T (epochs), decay_t (decay_epochs) and the milestones m_i
// (decay_milestones) in epochs, or in updates (x updates per epoch) when stepping per update:
//
//   t < warmup_t:  lr(t) = warmup_lr + t (end - warmup_lr) / warmup_t, a line to end = lr (tanh
//                  without warmup_prefix: to its own curve's value at warmup_t, as timm's)
//   otherwise, with t - warmup_t for t when warmup_prefix, by sched:
//     cosine:      min_lr + 0.5 (lr - min_lr)(1 + cos(pi t / T)),             min_lr from t = T
//     tanh:        min_lr + 0.5 (lr - min_lr)(1 - tanh(-7 (1 - t/T) + 3 t/T)), min_lr from t = T
//     poly:        min_lr + (lr - min_lr)(1 - t/T)^decay_rate,                min_lr from t = T
//     step:        lr decay_rate^(t // decay_t)   (Python's //: a fractional decay_t too)
//     multistep:   lr decay_rate^#{i : m_i <= t + 1}  (timm's bisect_right(milestones, t + 1):
//                  each decay comes one epoch (update) before its milestone, at 0-based m_i - 1)
//     none:        lr throughout, no warmup (timm's train.py makes no scheduler for it)
//   t = 0 without a warmup: lr (timm's first epoch or update runs at the optimizer's lr, never
//   stepped to t = 0: tanh's formula would give 8e-7 less, and a milestone 0 or 1 a decayed lr)
// step and multistep have no floor (min_lr unused); poly's power is decay_rate (timm overloads it,
// default 0.1 included).
// The warmup replaces the schedule's start (warmup_prefix false, timm's default): at t = warmup_t
// the cosine's lr is already min_lr + 0.5 (lr - min_lr)(1 + cos(pi warmup_t / T)), a little below
// lr. With warmup_prefix the schedule starts after the warmup, from lr, and the run is
// warmup_epochs longer (run_epochs). (ConvNeXt's own code runs the cosine over T - warmup_t after
// the warmup, neither of the two.) cooldown_epochs lengthens a cosine, tanh or poly run at min_lr.
//
// RunSchedule is the lr of a whole run: the config's schedule, or, for the positions before a
// resume changed it, the earlier schedule recorded in schedule_history (train/config.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/config.h"

namespace hg::train {

/// One schedule, its lengths and positions in epochs or in updates alike.
struct LrSchedule {
  std::string kind = "cosine";  ///< a sched value: cosine, tanh, poly, step, multistep or none
  double lr = 1e-3, warmup_lr = 1e-5, min_lr = 0.0;
  double warmup_t = 0;             ///< warmup length
  double t_total = 1;              ///< cosine, tanh, poly: schedule length (timm's t_initial)
  double decay_t = 1;              ///< step: length between decays
  std::vector<double> milestones;  ///< multistep: decay positions, increasing
  double decay_rate = 0.1;         ///< step, multistep: the lr's factor per decay; poly: power
  bool warmup_prefix = false;      ///< the schedule's t counts from the warmup's end

  /// Learning rate at time t (epoch index or update index, starting at 0).
  double at(double t) const;

 private:
  double after_warmup(double t) const;  // the schedule's own value at t (the formulas by sched)
};

/// The epochs a run trains: timm's num_epochs (create_scheduler_v2), which its train.py runs:
/// epochs, plus cooldown_epochs for cosine, tanh and poly (whose lr is min_lr by then; step,
/// multistep and none ignore it), plus warmup_epochs with warmup_prefix (for every sched, none
/// too, as timm).
int64_t run_epochs(const Config& cfg);

/// run_epochs as the keys make it, for messages: "epochs 10", or "12 epochs (epochs 10 +
/// cooldown_epochs 2)".
std::string run_epochs_text(const Config& cfg);

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
