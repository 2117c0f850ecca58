// LrSchedule::at (see schedule.h for the formula) and RunSchedule.
#include "train/schedule.h"

#include <cmath>
#include <limits>
#include <utility>

#include "core/error.h"

namespace hg::train {

double LrSchedule::at(double t) const {
  if (kind == "none") return lr;
  if (t < warmup_t) return warmup_lr + t * (lr - warmup_lr) / warmup_t;
  if (t >= t_total) return min_lr;
  return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(M_PI * t / t_total));
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
  const double unit = s.sched_on_updates ? static_cast<double>(updates_per_epoch) : 1.0;
  out.warmup_t = static_cast<double>(s.warmup_epochs) * unit;
  out.t_total = static_cast<double>(s.epochs) * unit;
  return out;
}

}  // namespace

RunSchedule::RunSchedule(const Config& cfg, int64_t updates_per_epoch) {
  for (const ScheduleSegment& s : cfg.schedule_history)
    parts_.push_back({s.until_epoch, s.until_step, make(s, updates_per_epoch), s.sched_on_updates});
  ScheduleSegment now{std::numeric_limits<int64_t>::max(),
                      0,
                      cfg.epochs,
                      peak_lr(cfg, "schedule"),
                      cfg.sched,
                      cfg.warmup_epochs,
                      cfg.warmup_lr,
                      cfg.min_lr,
                      cfg.sched_on_updates};
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
