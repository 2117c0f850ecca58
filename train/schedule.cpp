// LrSchedule::at (see schedule.h for the formulas), TorchCpuRandn and RunSchedule.
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

double TorchCpuRandn::uniform() {
  const uint64_t hi = engine_(), lo = engine_();  // CPUGeneratorImpl::random64: the first is high
  constexpr int kDigits = std::numeric_limits<double>::digits;  // 53
  return static_cast<double>(((hi << 32) | lo) & ((uint64_t{1} << kDigits) - 1)) *
         (1.0 / static_cast<double>(uint64_t{1} << kDigits));
}

double TorchCpuRandn::next() {
  double z;
  if (cached_) {
    z = *cached_;
    cached_.reset();
  } else {
    const double u1 = uniform(), u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log1p(-u2));
    const double theta = 2.0 * M_PI * u1;
    cached_ = r * std::sin(theta);
    z = r * std::cos(theta);
  }
  return static_cast<double>(static_cast<float>(z));  // the float tensor's value
}

double LrSchedule::after_warmup(double t) const {
  if (kind == "step") return lr * std::pow(decay_rate, python_floor_div(t, decay_t));
  if (kind == "multistep") {
    // timm counts the milestones <= t + 1 (bisect_right(milestones, t + 1))
    const auto passed =
        std::upper_bound(milestones.begin(), milestones.end(), t + 1) - milestones.begin();
    return lr * std::pow(decay_rate, static_cast<double>(passed));
  }
  // cosine, tanh, poly: timm's cycles, each computed in its order (the same doubles)
  double i, t_i, t_curr;
  if (cycle_mul != 1) {
    const double x = 1 - t / t_total * (1 - cycle_mul);
    // cycle_mul < 1: the shrinking cycles end at t = t_total / (1 - cycle_mul), where timm's log
    // fails (math domain error); past every cycle, as i >= cycle_limit is
    if (!(x > 0)) return min_lr;
    i = std::floor(std::log(x) / std::log(cycle_mul));  // Python's math.log(x, base)
    t_i = std::pow(cycle_mul, i) * t_total;
    t_curr = t - (1 - std::pow(cycle_mul, i)) / (1 - cycle_mul) * t_total;
  } else {
    i = python_floor_div(t, t_total);
    t_i = t_total;
    t_curr = t - t_total * i;
  }
  if (i >= static_cast<double>(cycle_limit)) return min_lr;
  const double top = lr * std::pow(cycle_decay, i);
  if (kind == "cosine")
    return min_lr + 0.5 * (top - min_lr) *
                        (1.0 + std::cos(M_PI * std::pow(t_curr, k_decay) / std::pow(t_i, k_decay)));
  if (kind == "tanh") {
    const double x = t_curr / t_i;
    return min_lr + 0.5 * (top - min_lr) * (1.0 - std::tanh(kTanhLb * (1.0 - x) + kTanhUb * x));
  }
  HG_CHECK(kind == "poly", "LrSchedule: unknown sched '", kind, "'");
  return min_lr +
         (top - min_lr) *
             std::pow(1.0 - std::pow(t_curr, k_decay) / std::pow(t_i, k_decay), decay_rate);
}

double LrSchedule::noise(double t) const {
  if (kind == "none" || t == 0 || noise_range.empty()) return 0;  // timm never steps to t = 0
  if (t < noise_range[0] || (noise_range.size() == 2 && t >= noise_range[1])) return 0;
  // timm's _calculate_noise: a generator seeded with noise_seed + t, redrawn until in bounds
  TorchCpuRandn randn(noise_seed + static_cast<uint64_t>(t));
  for (;;) {
    const double n = randn.next() * noise_std;
    if (std::fabs(n) < noise_pct) return n;
  }
}

double LrSchedule::at(double t) const {
  if (kind == "plateau") return at(t, plateau_start());
  if (kind == "none") return lr;
  if (t == 0 && warmup_t == 0) return lr;  // timm's first lr is the optimizer's, never stepped to 0
  double v;
  if (t < warmup_t) {
    const double end = kind == "tanh" && !warmup_prefix ? after_warmup(warmup_t) : lr;
    v = warmup_lr + t * ((end - warmup_lr) / warmup_t);  // timm's order: per-t step first
  } else {
    v = after_warmup(warmup_prefix ? t - warmup_t : t);
  }
  const double n = noise(t);
  return n == 0 ? v : v + v * n;  // timm's _add_noise
}

namespace {

// The warmup's line at t, in timm's order (the per-t step first), as its plateau scheduler draws it
double warmup_line(const LrSchedule& s, double t) {
  return s.warmup_lr + t * ((s.lr - s.warmup_lr) / s.warmup_t);
}

// torch's ReduceLROnPlateau._is_better in its rel threshold mode
bool beats(const LrSchedule& s, double metric, double best) {
  return s.minimize ? metric < best * (1.0 - s.threshold) : metric > best * (s.threshold + 1.0);
}

// torch's ReduceLROnPlateau._reduce_lr: a decay smaller than its eps is not made, so an lr at (or
// within 1e-8 of) the floor stays where it is
double reduced(const LrSchedule& s, double lr) {
  const double lower = std::max(lr * s.decay_rate, s.min_lr);
  return lr - lower > kTorchPlateauEps ? lower : lr;
}

}  // namespace

PlateauState LrSchedule::plateau_start() const {
  PlateauState st;
  // timm's plateau sets warmup_lr + t x step at each t <= warmup_t: its last is where the plateau
  // starts (lr up to rounding); without a warmup the optimizer's lr
  st.lr = warmup_t > 0 ? warmup_line(*this, warmup_t) : lr;
  st.best =
      minimize ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  return st;
}

double LrSchedule::at(double t, const PlateauState& st) const {
  HG_CHECK(kind == "plateau", "LrSchedule: a plateau state for sched '", kind, "'");
  if (t < warmup_t) return warmup_line(*this, t);
  // timm's plateau adds noise after its warmup only, on the lr held (restored before each step)
  const double n = t > warmup_t ? noise(t) : 0.0;
  return n == 0 ? st.lr : st.lr + st.lr * n;
}

void LrSchedule::plateau_step(PlateauState& st, int64_t epoch, double metric) const {
  // timm's step(epoch + 1) with epoch + 1 <= warmup_t sets the warmup's lr and leaves the plateau
  // alone: the metrics of the warmup's epochs are not counted
  if (static_cast<double>(epoch + 1) <= warmup_t) return;
  if (beats(*this, metric, st.best)) {
    st.best = metric;
    st.bad_epochs = 0;
  } else {
    ++st.bad_epochs;
  }
  if (st.cooldown_left > 0) {  // a decay was just made: its effect is waited for
    --st.cooldown_left;
    st.bad_epochs = 0;
  }
  if (st.bad_epochs > patience) {
    st.lr = reduced(*this, st.lr);
    st.cooldown_left = cooldown;
    st.bad_epochs = 0;
  }
}

double cycle_epochs(const Config& cfg) {
  const double cycles = static_cast<double>(std::max<int64_t>(1, cfg.lr_cycle_limit));
  const double epochs = static_cast<double>(cfg.epochs);
  if (cfg.lr_cycle_mul == 1.0) return epochs * cycles;
  return std::floor(-epochs * (std::pow(cfg.lr_cycle_mul, cycles) - 1) / (1 - cfg.lr_cycle_mul));
}

int64_t run_epochs(const Config& cfg) {
  const int64_t prefix = cfg.warmup_prefix ? cfg.warmup_epochs : 0;
  if (!decays_to_min_lr(cfg.sched)) return cfg.epochs + prefix;
  return static_cast<int64_t>(cycle_epochs(cfg)) + prefix + cfg.cooldown_epochs;
}

std::string run_epochs_text(const Config& cfg) {
  const int64_t prefix = cfg.warmup_prefix ? cfg.warmup_epochs : 0;
  const bool cycles = decays_to_min_lr(cfg.sched);
  const int64_t cooldown = cycles ? cfg.cooldown_epochs : 0;
  const int64_t cyc = cycles ? static_cast<int64_t>(cycle_epochs(cfg)) : cfg.epochs;
  std::string part = str("epochs ", cfg.epochs);  // the run's epochs as the key gives them
  const bool plain = !(cycles && cfg.lr_cycle_limit > 1) && cyc == cfg.epochs;
  if (cycles && cfg.lr_cycle_limit > 1)
    part = cfg.lr_cycle_mul == 1.0
               ? str("lr_cycle_limit ", cfg.lr_cycle_limit, " cycles of epochs ", cfg.epochs)
               : str(cyc, " of lr_cycle_limit ", cfg.lr_cycle_limit, " cycles from epochs ",
                     cfg.epochs, " x lr_cycle_mul ", cfg.lr_cycle_mul);
  else if (cyc != cfg.epochs)  // one cycle, which timm's floor made an epoch shorter
    part = str(cyc, " of epochs ", cfg.epochs, " as timm's get_cycle_length floors it with ",
               "lr_cycle_mul ", cfg.lr_cycle_mul);
  if (prefix == 0 && cooldown == 0 && plain) return part;
  return str(run_epochs(cfg), " epochs (", prefix > 0 ? str("warmup_epochs ", prefix, " + ") : "",
             part, cooldown > 0 ? str(" + cooldown_epochs ", cooldown) : "", ")");
}

int64_t epochs_for_run(const Config& cfg, int64_t target) {
  Config c = cfg;
  // run_epochs grows with epochs, at least one epoch a step (a cycle is never shorter than the
  // epochs of the first, but for timm's floor, which may take one off)
  for (c.epochs = 1; run_epochs(c) < target; ++c.epochs) {
  }
  return c.epochs;
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

LrSchedule make(const ScheduleSegment& s, int64_t updates_per_epoch, const Config& cfg) {
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
  out.cycle_mul = s.lr_cycle_mul;
  out.cycle_decay = s.lr_cycle_decay;
  out.cycle_limit = s.lr_cycle_limit;
  out.k_decay = s.lr_k_decay;
  // timm: noise_range = noise x t_initial, t_initial in updates when stepping per update (and
  // epochs, without warmup or cooldown, for every sched)
  for (double n : s.lr_noise) out.noise_range.push_back(n * out.t_total);
  out.noise_pct = s.lr_noise_pct;
  out.noise_std = s.lr_noise_std;
  out.noise_seed = static_cast<uint64_t>(cfg.seed);  // train.py's noise_seed is its seed
  // plateau: timm's create_scheduler_v2 passes patience_epochs and cooldown 0 (its
  // cooldown_epochs is not the plateau's), torch's threshold 1e-4 in rel mode, and train.py's
  // mode: 'min' for the train loss without validation, else 'max' for eval top-1 (--eval-metric's
  // default, the score haargrad ranks the epochs by)
  out.patience = cfg.patience_epochs;
  out.cooldown = 0;
  out.minimize = !has_validation(cfg);
  return out;
}

}  // namespace

RunSchedule::RunSchedule(const Config& cfg, int64_t updates_per_epoch) {
  for (const ScheduleSegment& s : cfg.schedule_history)
    parts_.push_back(
        {s.until_epoch, s.until_step, make(s, updates_per_epoch, cfg), s.sched_on_updates});
  const ScheduleSegment now =
      schedule_segment(cfg, std::numeric_limits<int64_t>::max(), 0, "schedule");
  parts_.push_back(
      {now.until_epoch, now.until_step, make(now, updates_per_epoch, cfg), now.sched_on_updates});
  // one state carries a plateau run through its parts, which differ in epochs alone (the lr
  // noise's range): a resume cannot switch to or from plateau (resume_settings.h)
  for (const Part& p : parts_)
    HG_CHECK((p.schedule.kind == "plateau") == (cfg.sched == "plateau"), "RunSchedule: sched ",
             cfg.sched, " after a schedule_history entry of sched ", p.schedule.kind,
             ": a run cannot switch to or from plateau");
  if (cfg.sched == "plateau") plateau_ = parts_.back().schedule.plateau_start();
}

void RunSchedule::set_plateau(const PlateauState& st) {
  HG_CHECK(plateau_.has_value(), "RunSchedule: a plateau state for a run of another sched");
  plateau_ = st;
}

void RunSchedule::end_epoch(int64_t epoch, double metric) {
  if (plateau_) parts_.back().schedule.plateau_step(*plateau_, epoch, metric);
}

double RunSchedule::part_lr(const Part& p, int64_t epoch, int64_t updates) const {
  if (plateau_) return p.schedule.at(static_cast<double>(epoch), *plateau_);
  return p.schedule.at(p.on_updates ? static_cast<double>(updates) : static_cast<double>(epoch));
}

const RunSchedule::Part& RunSchedule::part_at(int64_t epoch, int64_t step) const {
  for (const Part& p : parts_)
    if (std::pair(epoch, step) < std::pair(p.until_epoch, p.until_step)) return p;
  return parts_.back();  // the config's own schedule is open-ended
}

double RunSchedule::lr(int64_t epoch, int64_t step, int64_t updates) const {
  return part_lr(part_at(epoch, step), epoch, updates);
}

double RunSchedule::lr_set_after(int64_t epoch, int64_t last_step, int64_t updates) const {
  // (a plateau's: the epoch's own, before its metric is counted: the trainer records the epoch's
  // summary row before end_epoch, as timm's train.py writes it before stepping its scheduler)
  return part_lr(part_at(epoch, last_step), epoch, updates);
}

}  // namespace hg::train
