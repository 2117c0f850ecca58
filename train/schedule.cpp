// LrSchedule::at (see schedule.h for the formulas) and RunSchedule.
#include "train/schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/error.h"

namespace hg::train {

namespace {

// timm's TanhLRScheduler's defaults (create_scheduler_v2 sets no others): tanh runs from lb at the
// schedule's start to ub at its end
constexpr double kTanhLb = -7.0, kTanhUb = 3.0;

// Python's // of two floats (timm's step schedule: t // decay_t), t >= 0 and d > 0, as CPython
// computes it: the floor of the exact quotient, where floor(t / d) rounds the quotient first
// (11 / 2.2 is 5.0, but 11 // 2.2 is 4: the double 2.2 is a little above 2.2).
double python_floor_div(double t, double d) {
  const double div = (t - std::fmod(t, d)) / d;
  const double whole = std::floor(div);
  return div - whole > 0.5 ? whole + 1 : whole;
}

}  // namespace

double LrSchedule::after_warmup(double t) const {
  if (kind == "step") return lr * std::pow(decay_rate, python_floor_div(t, decay_t));
  if (kind == "multistep") {
    // timm counts the milestones <= t + 1 (bisect_right(milestones, t + 1))
    const auto passed =
        std::upper_bound(milestones.begin(), milestones.end(), t + 1) - milestones.begin();
    return lr * std::pow(decay_rate, static_cast<double>(passed));
  }
  // cosine, tanh, poly: one cycle, from lr at t = 0 down to min_lr at t_total
  if (t >= t_total) return min_lr;
  if (kind == "cosine") return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(M_PI * t / t_total));
  const double x = t / t_total;
  if (kind == "tanh")
    return min_lr + 0.5 * (lr - min_lr) * (1.0 - std::tanh(kTanhLb * (1.0 - x) + kTanhUb * x));
  HG_CHECK(kind == "poly", "LrSchedule: unknown sched '", kind, "'");
  return min_lr + (lr - min_lr) * std::pow(1.0 - x, decay_rate);
}

double LrSchedule::at(double t) const {
  if (kind == "none") return lr;
  if (t == 0 && warmup_t == 0) return lr;  // timm's first lr is the optimizer's, never stepped to 0
  if (t < warmup_t) {
    const double end = kind == "tanh" && !warmup_prefix ? after_warmup(warmup_t) : lr;
    return warmup_lr + t * ((end - warmup_lr) / warmup_t);  // timm's order: per-t step first
  }
  return after_warmup(warmup_prefix ? t - warmup_t : t);
}

int64_t run_epochs(const Config& cfg) {
  return cfg.epochs + (decays_to_min_lr(cfg.sched) ? cfg.cooldown_epochs : 0) +
         (cfg.warmup_prefix ? cfg.warmup_epochs : 0);
}

std::string run_epochs_text(const Config& cfg) {
  const int64_t prefix = cfg.warmup_prefix ? cfg.warmup_epochs : 0;
  const int64_t cooldown = run_epochs(cfg) - cfg.epochs - prefix;
  if (prefix == 0 && cooldown == 0) return str("epochs ", cfg.epochs);
  return str(run_epochs(cfg), " epochs (", prefix > 0 ? str("warmup_epochs ", prefix, " + ") : "",
             "epochs ", cfg.epochs, cooldown > 0 ? str(" + cooldown_epochs ", cooldown) : "", ")");
}

int64_t updates_per_epoch(int64_t steps, int64_t accum) {
  HG_CHECK(steps >= 1 && accum >= 1, "updates_per_epoch: steps ", steps, " and accum ", accum,
           " must be >= 1");
  return (steps + accum - 1) / accum;
}

int64_t micro_batches_of_update(int64_t step, int64_t steps, int64_t accum) {
  const int64_t rest = steps % accum;
  return rest != 0 && step >= steps - rest ? rest : accum;
}

namespace {

LrSchedule make(const ScheduleSegment& s, int64_t updates_per_epoch) {
  LrSchedule out;
  out.kind = s.sched;
  out.lr = s.lr;
  out.warmup_lr = s.warmup_lr;
  out.min_lr = s.min_lr;
  out.decay_rate = s.decay_rate;
  out.warmup_prefix = s.warmup_prefix;
  // timm's create_scheduler_v2 multiplies each length and position by updates per epoch
  const double unit = s.sched_on_updates ? static_cast<double>(updates_per_epoch) : 1.0;
  out.warmup_t = static_cast<double>(s.warmup_epochs) * unit;
  out.t_total = static_cast<double>(s.epochs) * unit;
  out.decay_t = s.decay_epochs * unit;
  for (int64_t m : s.decay_milestones) out.milestones.push_back(static_cast<double>(m) * unit);
  return out;
}

}  // namespace

RunSchedule::RunSchedule(const Config& cfg, int64_t updates_per_epoch) {
  for (const ScheduleSegment& s : cfg.schedule_history)
    parts_.push_back({s.until_epoch, s.until_step, make(s, updates_per_epoch), s.sched_on_updates});
  const ScheduleSegment now =
      schedule_segment(cfg, std::numeric_limits<int64_t>::max(), 0, "schedule");
  parts_.push_back({now.until_epoch, now.until_step, make(now, updates_per_epoch), now.sched_on_updates});
}

const RunSchedule::Part& RunSchedule::part_at(int64_t epoch, int64_t step) const {
  for (const Part& p : parts_)
    if (std::pair(epoch, step) < std::pair(p.until_epoch, p.until_step)) return p;
  return parts_.back();  // the config's own schedule is open-ended
}

double RunSchedule::lr(int64_t epoch, int64_t step, int64_t updates) const {
  const Part& p = part_at(epoch, step);
  return p.schedule.at(p.on_updates ? static_cast<double>(updates) : static_cast<double>(epoch));
}

double RunSchedule::lr_set_after(int64_t epoch, int64_t last_step, int64_t updates) const {
  const Part& p = part_at(epoch, last_step);
  return p.schedule.at(p.on_updates ? static_cast<double>(updates) : static_cast<double>(epoch));
}

}  // namespace hg::train
