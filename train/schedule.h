// Learning-rate schedule: timm's CosineLRScheduler with linear warmup (cycle limit 1, no k-decay,
// no noise), stepped per epoch or per optimizer update (sched_on_updates).
//
//   t < warmup_t:  lr(t) = warmup_lr + t * (lr - warmup_lr) / warmup_t
//   otherwise:     lr(t) = min_lr + 0.5 * (lr - min_lr) * (1 + cos(pi * (t - warmup_t) / (t_total - warmup_t)))
//   after t_total: min_lr
// with t, warmup_t and t_total in epochs, or in updates when stepping per update. "none" keeps lr.
#pragma once

#include <string>

namespace hg::train {

struct LrSchedule {
  std::string kind = "cosine";  ///< "cosine" | "none"
  double lr = 1e-3, warmup_lr = 1e-5, min_lr = 0.0;
  double warmup_t = 0;  ///< warmup length (epochs or updates)
  double t_total = 1;   ///< schedule length (epochs or updates)

  /// Learning rate at time t (epoch index or update index, starting at 0).
  double at(double t) const;
};

}  // namespace hg::train
