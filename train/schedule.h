// Learning-rate schedules: timm's schedulers as its create_scheduler_v2 makes them from train.py's
// keys, stepped per epoch or per optimizer update (sched_on_updates). With t, warmup_t, T
// (epochs), decay_t (decay_epochs) and the milestones m_i (decay_milestones) in epochs, or in
// updates (x updates per epoch) when stepping per update:
//
//   t < warmup_t:  lr(t) = warmup_lr + t (end - warmup_lr) / warmup_t, a line to end = lr (tanh
//                  without warmup_prefix: to its own curve's value at warmup_t, as timm's)
//   otherwise, with t - warmup_t for t when warmup_prefix, by sched:
//     cosine, tanh, poly: timm's cycles (lr_cycle_mul M, lr_cycle_decay d, lr_cycle_limit L):
//                  cycle i = floor(t / T) (M = 1) or floor(log_M(1 - t (1 - M) / T)) (M != 1),
//                  which starts at t0 = T (1 - M^i) / (1 - M) and lasts T_i = T M^i; in it
//                  t_c = t - t0, top = lr d^i, and with k = lr_k_decay (cosine and poly) by sched:
//     cosine:      min_lr + 0.5 (top - min_lr)(1 + cos(pi t_c^k / T_i^k))
//     tanh:        min_lr + 0.5 (top - min_lr)(1 - tanh(-7 (1 - t_c/T_i) + 3 t_c/T_i))
//     poly:        min_lr + (top - min_lr)(1 - t_c^k / T_i^k)^decay_rate
//                  and min_lr from cycle L on (one cycle by default: min_lr from t = T)
//     step:        lr decay_rate^(t // decay_t)   (Python's //: a fractional decay_t too)
//     multistep:   lr decay_rate^#{i : m_i <= t + 1}  (timm's bisect_right(milestones, t + 1):
//                  each decay comes one epoch (update) before its milestone, at 0-based m_i - 1)
//     none:        lr throughout, no warmup (timm's train.py makes no scheduler for it)
//   t = 0 without a warmup: lr (timm's first epoch or update runs at the optimizer's lr, never
//   stepped to t = 0: tanh's formula would give 8e-7 less, and a milestone 0 or 1 a decayed lr)
//   lr noise (lr_noise [start] or [start, end], fractions of T; every sched but none): at each t
//   > 0 with start T <= t (< end T), lr(t) x (1 + n), n drawn as timm's scheduler draws it: torch's
//   CPU generator seeded with seed + t, n = randn() x lr_noise_std until |n| < lr_noise_pct
//   (TorchCpuRandn: the same bits as torch's, so the same lr as timm's run). t = 0 has none: timm
//   never steps there.
// step and multistep have no floor (min_lr unused); poly's power is decay_rate (timm overloads it,
// default 0.1 included). With M < 1 the cycles shrink and end at t = T / (1 - M): from there on
// min_lr (timm's log of a number <= 0 fails there: a math domain error).
// The warmup replaces the schedule's start (warmup_prefix false, timm's default): at t = warmup_t
// the cosine's lr is already min_lr + 0.5 (lr - min_lr)(1 + cos(pi warmup_t / T)), a little below
// lr. With warmup_prefix the schedule starts after the warmup, from lr, and the run is
// warmup_epochs longer (run_epochs). (ConvNeXt's own code runs the cosine over T - warmup_t after
// the warmup, neither of the two.) cooldown_epochs lengthens a cosine, tanh or poly run at min_lr.
//
//   plateau:     timm's PlateauLRScheduler (torch's ReduceLROnPlateau inside), stepped per epoch
//                only, by the metric that ranks the epochs (see PlateauState): the warmup's line
//                up to t = warmup_t (its last value, warmup_lr + warmup_t (lr - warmup_lr) /
//                warmup_t, is where the plateau starts; lr without a warmup), then the lr held,
//                x decay_rate (never below min_lr) each time more than patience epochs in a row
//                failed to beat the best metric by a relative threshold of 1e-4; noise as above
//                but only at t > warmup_t (timm's plateau draws none in its warmup).
//
// RunSchedule is the lr of a whole run: the config's schedule, or, for the positions before a
// resume changed it, the earlier schedule recorded in schedule_history (train/config.h).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "train/config.h"

namespace hg::train {

/// torch.randn(1, generator=g) of a torch.Generator() after g.manual_seed(seed), call after call,
/// as timm's lr noise draws it (Scheduler._calculate_noise): torch's CPU generator is mt19937
/// seeded with the seed's low 32 bits, and a tensor of fewer than 16 elements is filled by
/// at::normal_distribution<double>: Box-Muller on two 53-bit uniforms u1, u2 (each from two
/// 32-bit draws, the first the high half), r = sqrt(-2 log1p(-u2)), theta = 2 pi u1, r cos(theta)
/// returned and r sin(theta) kept for the next call; the float tensor rounds each to a float.
class TorchCpuRandn {
 public:
  explicit TorchCpuRandn(uint64_t seed) : engine_(static_cast<uint32_t>(seed)) {}
  /// The next value, a float (the tensor's) as a double (.item()).
  double next();

 private:
  double uniform();  // at::uniform_real_distribution<double>(0, 1)
  std::mt19937 engine_;
  std::optional<double>
      cached_;  // the pair's second value (CPUGeneratorImpl's next_double_normal_sample)
};

/// Where a plateau schedule stands after the metrics of the epochs that ended: what torch's
/// ReduceLROnPlateau keeps (timm's PlateauLRScheduler holds one) and the lr it holds. timm loses it
/// on a resume; haargrad's checkpoints keep it (TrainState::plateau), so a resumed run follows the
/// lrs of one never stopped.
struct PlateauState {
  double lr = 0;  ///< the lr held after the warmup, before noise
  /// The best metric counted so far; +inf (a loss, lower is better) or -inf (top-1) before the
  /// first: torch's mode_worse, which any finite metric beats.
  double best = -std::numeric_limits<double>::infinity();
  int64_t bad_epochs = 0;     ///< counted epochs since the best that did not beat it
  int64_t cooldown_left = 0;  ///< epochs left after a decay whose bad epochs are not counted
  bool operator==(const PlateauState&) const = default;
};

/// One schedule, its lengths and positions in epochs or in updates alike.
struct LrSchedule {
  /// a sched value: cosine, tanh, poly, step, multistep, none or plateau
  std::string kind = "cosine";
  double lr = 1e-3, warmup_lr = 1e-5, min_lr = 0.0;
  double warmup_t = 0;             ///< warmup length
  double t_total = 1;              ///< cosine, tanh, poly: schedule length (timm's t_initial)
  double decay_t = 1;              ///< step: length between decays
  std::vector<double> milestones;  ///< multistep: decay positions, increasing
  double decay_rate = 0.1;         ///< step, multistep: the lr's factor per decay; poly: power
  bool warmup_prefix = false;      ///< the schedule's t counts from the warmup's end
  double cycle_mul = 1;            ///< cosine, tanh, poly: a cycle's length over the one before
  double cycle_decay = 0.5;        ///< cosine, tanh, poly: a cycle's peak over the one before
  int64_t cycle_limit = 1;         ///< cosine, tanh, poly: cycles before min_lr
  double k_decay = 1;              ///< cosine, poly: the k of t^k / T^k
  /// lr noise's range of t: [] none, [start] from start on, [start, end) (timm's noise_range_t)
  std::vector<double> noise_range;
  double noise_pct = 0.67, noise_std = 1;
  uint64_t noise_seed = 42;  ///< t's noise is drawn with seed noise_seed + t
  // plateau (t in epochs); decay_rate is its factor per decay, min_lr its floor
  int64_t patience = 10;    ///< counted epochs without a new best tolerated before a decay
  int64_t cooldown = 0;     ///< epochs after a decay whose bad epochs are not counted (timm: 0)
  double threshold = 1e-4;  ///< a new best beats the old by this fraction of it (torch's rel)
  bool minimize = false;    ///< the metric improves downwards (a loss), else upwards (top-1)

  /// Learning rate at time t (epoch index or update index, starting at 0), noise included. A
  /// plateau schedule's lr at its start (plateau_start), before any metric.
  double at(double t) const;

  /// plateau: the lr of epoch t (0-based) with `st` the state after the metrics of epochs < t.
  double at(double t, const PlateauState& st) const;

  /// plateau: the state before any metric: the lr where the warmup ends (lr without a warmup).
  PlateauState plateau_start() const;

  /// plateau: counts `metric`, the score of epoch `epoch` (0-based) that just ended, into `st`, as
  /// timm's train.py steps its scheduler then (step(epoch + 1, metric)): not at all while epoch +
  /// 1 <= warmup_t (the warmup's lr is set, the plateau not stepped); else torch's
  /// ReduceLROnPlateau.step: a metric that beats best by the relative threshold is the new best,
  /// any other is a bad epoch (none counted while cooling down); more than `patience` bad epochs
  /// in a row set lr = max(lr x decay_rate, min_lr) where that lowers it by more than 1e-8
  /// (torch's eps), restart the count and start the cooldown.
  void plateau_step(PlateauState& st, int64_t epoch, double metric) const;

  /// The noise n of lr(t) = value x (1 + n): 0 outside noise_range and at t = 0.
  double noise(double t) const;

 private:
  double after_warmup(double t) const;  // the schedule's own value at t (the formulas by sched)
};

/// The epochs of the cycles of a cosine, tanh or poly schedule, as timm's get_cycle_length counts
/// them (in epochs): c = max(1, lr_cycle_limit) cycles, epochs x c for lr_cycle_mul 1, else
/// floor(-epochs (lr_cycle_mul^c - 1) / (1 - lr_cycle_mul)). As a double, for checks of its size.
double cycle_epochs(const Config& cfg);

/// The epochs a run trains: timm's num_epochs (create_scheduler_v2), which its train.py runs: for
/// cosine, tanh and poly the cycles' epochs (cycle_epochs: epochs, with the default one cycle)
/// plus cooldown_epochs (whose lr is min_lr); for step, multistep and none epochs (they ignore
/// cooldown_epochs and the cycles); plus warmup_epochs with warmup_prefix (for every sched, none
/// too, as timm). (Stepping per update with lr_cycle_mul != 1, timm counts the cycles in updates
/// and divides by the updates per epoch: that can come out an epoch less where its float product
/// falls just below a whole number of updates, e.g. lr_cycle_mul 0.3, epochs 1, 3 updates an
/// epoch: 2.9999999999999996 updates, 0 epochs. Counted here in epochs, it does not depend on the
/// data: a run's length is known before its data is read.)
int64_t run_epochs(const Config& cfg);

/// run_epochs as the keys make it, for messages: "epochs 10", or "12 epochs (epochs 10 +
/// cooldown_epochs 2)", "49 epochs (47 of lr_cycle_limit 3 cycles from epochs 10 x lr_cycle_mul
/// 1.5 + cooldown_epochs 2)".
std::string run_epochs_text(const Config& cfg);

/// The least `epochs` for which run_epochs, the other keys as they are, is at least `target`: what
/// to set for a run to reach its epoch `target`.
int64_t epochs_for_run(const Config& cfg, int64_t target);

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

  /// sched plateau: the state after the metrics of the epochs ended so far (plateau_start before
  /// any); nullopt for every other sched.
  const std::optional<PlateauState>& plateau() const { return plateau_; }

  /// sched plateau: goes on from `st` (a resume's checkpoint). Throws hg::Error for another sched.
  void set_plateau(const PlateauState& st);

  /// The end of epoch `epoch` (0-based) with `metric`, the score that ranks it (eval top-1, the
  /// EMA's with a model EMA; the mean train loss without validation): a plateau schedule counts
  /// it (LrSchedule::plateau_step); the other scheds are functions of the position and ignore it.
  void end_epoch(int64_t epoch, double metric);

 private:
  struct Part {
    int64_t until_epoch, until_step;  // used for positions before this one
    LrSchedule schedule;
    bool on_updates;
  };
  std::vector<Part> parts_;  // schedule_history, then the config's own (open-ended) schedule
  const Part& part_at(int64_t epoch, int64_t step) const;  // the part that covers a position
  double part_lr(const Part& p, int64_t epoch, int64_t updates) const;  // its lr at a position
  // sched plateau (every part's, resume_settings.h refuses a change of it): the metrics' state
  std::optional<PlateauState> plateau_;
};

}  // namespace hg::train
