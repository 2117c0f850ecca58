// LrSchedule::at (see schedule.h for the formula).
#include "train/schedule.h"

#include <cmath>

namespace hg::train {

double LrSchedule::at(double t) const {
  if (kind == "none") return lr;
  if (t < warmup_t) return warmup_lr + t * (lr - warmup_lr) / warmup_t;
  if (t >= t_total) return min_lr;
  const double span = t_total - warmup_t;
  if (span <= 0) return lr;
  return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(M_PI * (t - warmup_t) / span));
}

}  // namespace hg::train
