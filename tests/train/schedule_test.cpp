// The learning rate as timm computes it: its schedulers' values (expected values computed from
// _get_lr of timm/scheduler/{cosine,tanh,poly,step,multistep}_lr.py at create_scheduler_v2's
// settings; cycles, k-decay and noise at the end), stepped per epoch and per update; train.py's lr
// from lr_base and the global batch; the optimizer names.
#include "train/schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"
#include "train/config.h"
#include "train/optimizer.h"

using namespace hg;
using namespace hg::train;

// The warmup replaces the cosine's start: at its end the lr is already below lr (0.99391 here,
// where a cosine over the epochs after the warmup would give 1.0).
TEST(Schedule, CosineAsTimm) {
  LrSchedule s;
  s.lr = 1.0;
  s.warmup_lr = 1e-3;
  s.min_lr = 0.01;
  s.warmup_t = 5;
  s.t_total = 100;
  const std::vector<std::pair<double, double>> want = {
      {0, 0.001},  {2, 0.4006}, {5, 0.9939057285945933}, {50, 0.505}, {99, 0.010244252618962859},
      {100, 0.01}, {150, 0.01}};
  for (const auto& [t, lr] : want) EXPECT_NEAR(s.at(t), lr, 1e-12) << "t = " << t;
  s.kind = "none";
  EXPECT_EQ(s.at(50), 1.0);
}

namespace {

// A schedule of `kind` from lr 1 to min_lr 0.01 over 100 (epochs or updates), with a warmup of
// `warmup_t` from 1e-3.
LrSchedule schedule(const std::string& kind, double warmup_t) {
  LrSchedule s;
  s.kind = kind;
  s.lr = 1.0;
  s.warmup_lr = 1e-3;
  s.min_lr = 0.01;
  s.warmup_t = warmup_t;
  s.t_total = 100;
  return s;
}

void expect_values(const LrSchedule& s, const std::vector<std::pair<double, double>>& want) {
  for (const auto& [t, lr] : want) EXPECT_NEAR(s.at(t), lr, 1e-15) << s.kind << " at t = " << t;
}

}  // namespace

// timm's StepLRScheduler: lr x decay_rate^(t // decay_t) after the warmup's line to lr, with
// Python's //: 11 // 2.2 is 4 (2.2 is a little above 2.2), where floor(11 / 2.2) is 5.
TEST(Schedule, StepAsTimm) {
  LrSchedule s = schedule("step", 3);
  s.lr = 0.1;
  s.decay_t = 30;
  s.decay_rate = 0.1;
  expect_values(s,
                {{0, 1e-3}, {1, 0.034}, {3, 0.1}, {29, 0.1}, {30, 0.01}, {59, 0.01}, {60, 1e-3}});
  s.lr = 1.0;
  s.warmup_t = 0;
  s.decay_t = 2.2;
  s.decay_rate = 0.5;
  expect_values(s, {{0, 1.0}, {4, 0.5}, {10, 0.0625}, {11, 0.0625}, {12, 0.03125}});
}

// timm's MultiStepLRScheduler counts the milestones <= t + 1 (bisect_right(milestones, t + 1)):
// each decay comes one epoch before its milestone (at 0-based epoch 29 for 30), and after the last
// one the lr stays. Its first epoch runs at lr (timm never steps to t = 0), a milestone 1 too.
TEST(Schedule, MultistepAsTimm) {
  LrSchedule s = schedule("multistep", 0);
  s.lr = 0.1;
  s.milestones = {30, 60, 90};
  s.decay_rate = 0.1;
  expect_values(s, {{0, 0.1},
                    {28, 0.1},
                    {29, 0.01},
                    {30, 0.01},
                    {58, 0.01},
                    {59, 1e-3},
                    {88, 1e-3},
                    {89, 1e-4},
                    {200, 1e-4}});
  s.warmup_t = 5;
  expect_values(s, {{0, 1e-3}, {2, 0.0406}, {5, 0.1}});
  s.warmup_t = 0;
  s.milestones = {1};
  expect_values(s, {{0, 0.1}, {1, 0.01}});
}

// timm's PolyLRScheduler: min_lr + (lr - min_lr)(1 - t / T)^power, the power being decay_rate
// (create_scheduler_v2), after a warmup that replaces its start (at t = 5 the lr is below lr).
TEST(Schedule, PolyAsTimm) {
  LrSchedule s = schedule("poly", 5);
  s.decay_rate = 0.9;
  expect_values(s, {{0, 1e-3},
                    {2, 0.4006},
                    {5, 0.9553365278052848},
                    {50, 0.5405278639554651},
                    {99, 0.025690442605365037},
                    {100, 0.01},
                    {150, 0.01}});
  s.decay_rate = 0.1;  // timm's default decay_rate as the power
  s.min_lr = 0;
  s.warmup_t = 0;
  expect_values(s, {{0, 1.0}, {50, 0.9330329915368074}, {90, 0.7943282347242815}});
}

// timm's TanhLRScheduler (lb -7, ub 3): its warmup is a line to the tanh curve's own value at the
// warmup's end (0.99999776 here), not to lr; without a warmup the first epoch has lr itself, not
// the curve's 0.99999918.
TEST(Schedule, TanhAsTimm) {
  LrSchedule s = schedule("tanh", 5);
  expect_values(s, {{0, 1e-3},
                    {2, 0.400599104911578},
                    {4, 0.800198209823156},
                    {5, 0.999997762278945},
                    {50, 0.9821936521375294},
                    {99, 0.012988232161461366},
                    {100, 0.01},
                    {130, 0.01}});
  s.warmup_t = 0;
  EXPECT_EQ(s.at(0), 1.0);
  EXPECT_NEAR(s.at(1), 0.9999989945258648, 1e-15);
}

// warmup_prefix (timm's): after the warmup t counts from its end, so every schedule starts from lr
// there (tanh's warmup then ends at lr, not at its curve's value), each decay comes warmup_t
// later, and the cosine ends at warmup_t + T.
TEST(Schedule, WarmupPrefixAsTimm) {
  for (const char* kind : {"cosine", "tanh", "poly"}) {
    LrSchedule s = schedule(kind, 5);
    s.warmup_prefix = true;
    s.decay_rate = 0.9;
    expect_values(s, {{0, 1e-3}, {2, 0.4006}, {105, 0.01}});
  }
  LrSchedule s = schedule("cosine", 5);
  s.warmup_prefix = true;
  expect_values(s, {{5, 1.0}, {55, 0.505}, {104, 0.010244252618962859}});
  s.kind = "tanh";
  expect_values(s, {{5, 0.9999991767872526}, {55, 0.9821936521375294}});
  s.kind = "poly";
  s.decay_rate = 0.9;
  expect_values(s, {{5, 1.0}, {55, 0.5405278639554651}});
  s.kind = "step";
  s.lr = 0.1;
  s.warmup_t = 3;
  s.decay_t = 30;
  s.decay_rate = 0.1;
  expect_values(s, {{2, 0.067}, {3, 0.1}, {32, 0.1}, {33, 0.01}});
  s.kind = "multistep";
  s.warmup_t = 5;
  s.milestones = {30};
  expect_values(s, {{5, 0.1}, {33, 0.1}, {34, 0.01}});  // t - 5 + 1 reaches 30 at t = 34
}

// The epochs a run trains, timm's num_epochs: cooldown_epochs lengthens cosine, tanh and poly
// (step, multistep and none ignore it), warmup_prefix every sched (none too, as timm's factory).
TEST(Schedule, RunEpochsAsTimm) {
  Config c;
  c.epochs = 100;
  c.warmup_epochs = 5;
  c.cooldown_epochs = 10;
  const std::vector<std::pair<std::string, int64_t>> want = {{"cosine", 110},    {"tanh", 110},
                                                             {"poly", 110},      {"step", 100},
                                                             {"multistep", 100}, {"none", 100}};
  for (const auto& [sched, epochs] : want) {
    c.sched = sched;
    c.warmup_prefix = false;
    EXPECT_EQ(run_epochs(c), epochs) << sched;
    c.warmup_prefix = true;
    EXPECT_EQ(run_epochs(c), epochs + 5) << sched << " with warmup_prefix";
  }
  EXPECT_EQ(run_epochs_text(c), "105 epochs (warmup_epochs 5 + epochs 100)");  // none
  c.sched = "cosine";
  EXPECT_EQ(run_epochs_text(c), "115 epochs (warmup_epochs 5 + epochs 100 + cooldown_epochs 10)");
  c.warmup_prefix = false;
  EXPECT_EQ(run_epochs_text(c), "110 epochs (epochs 100 + cooldown_epochs 10)");
  c.cooldown_epochs = 0;
  EXPECT_EQ(run_epochs_text(c), "epochs 100");
}

// Per update, warmup_prefix shifts t by the warmup's updates (3 here): the cosine over epochs 2
// (6 updates) runs from update 3 to 9, and a cooldown epoch after it has min_lr.
TEST(Schedule, WarmupPrefixAndCooldownPerUpdate) {
  Config c;
  c.sched = "cosine";
  c.lr = 0.1;
  c.min_lr = 1e-3;
  c.warmup_lr = 0.01;
  c.warmup_epochs = 1;
  c.epochs = 2;
  c.cooldown_epochs = 1;
  c.warmup_prefix = true;
  c.sched_on_updates = true;
  ASSERT_EQ(run_epochs(c), 4);
  const RunSchedule r(c, 3);
  const std::vector<std::pair<int64_t, double>> want = {
      {0, 0.01}, {1, 0.04}, {3, 0.1}, {6, 0.0505}, {8, 0.007631742512670284},
      {9, 1e-3}, {11, 1e-3}};
  for (const auto& [u, lr] : want) EXPECT_NEAR(r.lr(u / 3, u % 3, u), lr, 1e-15) << "update " << u;
}

// sched_on_updates: t counts optimizer updates (3 an epoch here), update u using lr(u).
TEST(Schedule, PerUpdate) {
  Config c;
  c.lr = 2e-3;
  c.warmup_lr = 1e-5;
  c.min_lr = 1e-5;
  c.warmup_epochs = 1;
  c.epochs = 4;
  c.sched_on_updates = true;
  const RunSchedule r(c, 3);
  const std::vector<std::pair<int64_t, double>> want = {
      {0, 1e-5},     {1, 0.0006733333333333334},   {3, 0.0017085712472806147},
      {6, 0.001005}, {11, 4.3903802842377136e-05}, {12, 1e-5}};
  for (const auto& [u, lr] : want) EXPECT_NEAR(r.lr(u / 3, u % 3, u), lr, 1e-15) << "update " << u;
  c.sched_on_updates = false;  // per epoch: every update of epoch 1 at lr(1)
  const RunSchedule e(c, 3);
  EXPECT_NEAR(e.lr(1, 0, 3), e.lr(1, 2, 5), 0);
  EXPECT_NEAR(e.lr(1, 0, 3), 1e-5 + 0.5 * (2e-3 - 1e-5) * (1 + std::cos(M_PI / 4)), 1e-15);
}

// Stepping per update, timm multiplies decay_epochs and each milestone by the updates of an epoch
// (3 here): step decays every 6 updates (and 1.5 epochs every 4.5), multistep's milestone 2 at
// update 5 (its t + 1 = 6), the last of epoch 2; per epoch, that milestone decays the lr of epoch 2
// (0-based 1), the first after the warmup.
TEST(Schedule, StepAndMultistepPerUpdate) {
  Config c;
  c.lr = 0.1;
  c.warmup_lr = 0.01;
  c.warmup_epochs = 1;
  c.epochs = 10;
  c.decay_rate = 0.5;
  c.sched_on_updates = true;
  auto expect_lrs = [&](const std::vector<std::pair<int64_t, double>>& want) {
    const RunSchedule r(c, 3);
    for (const auto& [t, lr] : want) {
      const int64_t epoch = c.sched_on_updates ? t / 3 : t;
      EXPECT_NEAR(r.lr(epoch, c.sched_on_updates ? t % 3 : 0, c.sched_on_updates ? t : 3 * t), lr,
                  1e-15)
          << c.sched << (c.sched_on_updates ? " at update " : " at epoch ") << t;
    }
  };
  c.sched = "step";
  c.decay_epochs = 2;
  expect_lrs({{0, 0.01}, {1, 0.04}, {3, 0.1}, {5, 0.1}, {6, 0.05}, {11, 0.05}, {12, 0.025}});
  c.sched = "multistep";
  c.decay_milestones = {2, 4};
  expect_lrs({{0, 0.01}, {3, 0.1}, {4, 0.1}, {5, 0.05}, {10, 0.05}, {11, 0.025}, {30, 0.025}});
  c.sched_on_updates = false;
  expect_lrs({{0, 0.01}, {1, 0.05}, {2, 0.05}, {3, 0.025}, {9, 0.025}});
  c.sched = "step";
  c.warmup_epochs = 0;
  c.sched_on_updates = true;
  c.decay_epochs = 1.5;
  expect_lrs({{4, 0.1}, {5, 0.05}, {8, 0.05}, {9, 0.025}});
}

// A run stepping per update, 3 epochs at lr 1e-3, resumed after epoch 2 of a 2-epoch schedule at
// lr 2e-3 that stepped per update or per epoch (`before_on_updates`).
Config resumed_at_epoch_2(bool before_on_updates) {
  Config c;
  c.lr = 1e-3;
  c.warmup_lr = 1e-5;
  c.min_lr = 1e-5;
  c.warmup_epochs = 0;
  c.epochs = 3;
  c.sched_on_updates = true;
  c.schedule_history = {ScheduleSegment{2, 0, 2, 2e-3, "cosine", 0, 1e-5, 1e-5, before_on_updates}};
  return c;
}

// A run of 2 epochs (3 updates each) resumed with epochs 3 and another lr: the summary row of
// epoch 2 records the lr its own schedule set after its last update (min_lr, the end of the
// 2-epoch cosine), as the run wrote it then, not the resumed schedule's first value; a rerun of
// the resumed run's args.yaml (this schedule_history) wrote the latter, another summary.csv.
TEST(Schedule, SummaryLrAtAResumesBoundaryIsTheEndingSchedules) {
  Config c = resumed_at_epoch_2(true);
  const RunSchedule r(c, 3);
  EXPECT_EQ(r.lr_set_after(1, 2, 6), 1e-5);  // the 2-epoch schedule's end
  EXPECT_NE(r.lr(2, 0, 6), 1e-5);            // the resumed schedule at update 6
  EXPECT_EQ(r.lr_set_after(2, 2, 9), 1e-5);  // the 3-epoch schedule's end
  // inside one schedule, the next update's lr
  EXPECT_EQ(r.lr_set_after(0, 2, 3), r.lr(1, 0, 3));
}

// The same where a resume changed how the schedule steps: epochs 1 and 2 ran a per-epoch
// schedule, so their rows record its values at epochs 0 and 1 (the epoch's own lr), though the
// run now steps per update; and inside one per-epoch schedule an epoch records its own lr (timm
// steps such a schedule after the summary), not the next epoch's.
TEST(Schedule, SummaryLrAtAChangeOfSchedOnUpdatesIsTheEndingSchedules) {
  Config c = resumed_at_epoch_2(false);
  const RunSchedule r(c, 3);
  EXPECT_EQ(r.lr_set_after(1, 2, 6), r.lr(1, 2, 3));  // epoch 2's own, per epoch
  EXPECT_EQ(r.lr_set_after(0, 2, 3), 2e-3);           // epoch 1's: t = 0, the peak
  c.schedule_history.clear();
  c.sched_on_updates = false;
  const RunSchedule e(c, 3);
  EXPECT_EQ(e.lr_set_after(0, 2, 3), e.lr(0, 2, 0));
  EXPECT_NE(e.lr_set_after(0, 2, 3), e.lr(1, 0, 3));
}

// timm's train.py: lr = lr_base x global batch / lr_base_size, square-rooted for adaptive
// optimizers; a set lr wins.
TEST(Schedule, LrFromLrBase) {
  Config c;  // lr null, lr_base 0.1 at 256, batch_size 128, opt sgd
  EXPECT_FALSE(c.lr.has_value());
  EXPECT_DOUBLE_EQ(effective_lr(c, 1), 0.05);  // sgd: linear
  c.opt = "adamw";
  EXPECT_DOUBLE_EQ(effective_lr(c, 1), 0.07071067811865477);  // sqrt(128 / 256)
  c.grad_accum_steps = 2;
  EXPECT_DOUBLE_EQ(effective_lr(c, 8), 0.28284271247461906);  // 128 x 8 x 2 = 2048: sqrt(8)
  c.lr_base_scale = "linear";
  EXPECT_DOUBLE_EQ(effective_lr(c, 8), 0.8);
  c.lr_base = 4e-3;
  c.lr_base_size = 4096;
  EXPECT_DOUBLE_EQ(effective_lr(c, 16), 4e-3 * 4096 / 4096.0 * 1.0);  // 128 x 16 x 2 = 4096
  const std::string how = resolve_lr(c, 16);
  ASSERT_TRUE(c.lr.has_value());
  EXPECT_DOUBLE_EQ(*c.lr, 4e-3);
  EXPECT_NE(how.find("lr_base"), std::string::npos) << how;
  EXPECT_NE(how.find("4096 images per update"), std::string::npos) << how;
  EXPECT_EQ(resolve_lr(c, 1), "");  // set now: kept, whatever the world size
  EXPECT_DOUBLE_EQ(*c.lr, 4e-3);
  EXPECT_DOUBLE_EQ(peak_lr(c, "test"), 4e-3);
  Config low;
  low.min_lr = 1.0;  // above the computed 0.05
  EXPECT_THROW(resolve_lr(low, 1), Error);
  EXPECT_THROW(peak_lr(Config{}, "test"), Error);
  // an lr_base that passes its own check can overflow the product: refused before the run,
  // naming lr_base (args.yaml would hold `lr: inf`, which no config reads back)
  Config huge;
  huge.lr_base = 1e308;
  huge.lr_base_size = 1;
  try {
    resolve_lr(huge, 1);
    FAIL() << "an infinite lr was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a finite number"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("lr_base"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(huge.lr.has_value());
}

// timm's names: sgd is Nesterov momentum, momentum is classical momentum.
TEST(Schedule, OptimizerNames) {
  std::vector<ParamGroup> groups;
  auto sgd = make_optimizer("sgd", groups, 0.9);
  ASSERT_NE(dynamic_cast<SGD*>(sgd.get()), nullptr);
  EXPECT_TRUE(dynamic_cast<SGD*>(sgd.get())->nesterov);
  auto mom = make_optimizer("momentum", groups, 0.9);
  ASSERT_NE(dynamic_cast<SGD*>(mom.get()), nullptr);
  EXPECT_FALSE(dynamic_cast<SGD*>(mom.get())->nesterov);
  EXPECT_NE(dynamic_cast<AdamW*>(make_optimizer("adamw", groups, 0.9).get()), nullptr);
  // opt_betas / opt_eps reach AdamW (they are torch's defaults unless given)
  auto adamw = make_optimizer("adamw", groups, 0.9, {0.8, 0.95, 1e-6});
  ASSERT_NE(dynamic_cast<AdamW*>(adamw.get()), nullptr);
  EXPECT_EQ(dynamic_cast<AdamW*>(adamw.get())->beta1, 0.8);
  EXPECT_EQ(dynamic_cast<AdamW*>(adamw.get())->beta2, 0.95);
  EXPECT_EQ(dynamic_cast<AdamW*>(adamw.get())->eps, 1e-6);
  EXPECT_EQ(dynamic_cast<AdamW*>(make_optimizer("adamw", groups, 0.9).get())->beta2, 0.999);
  EXPECT_THROW(make_optimizer("adamw", groups, 0.9, {0.9, 1.0, 1e-8}), Error);
  EXPECT_THROW(make_optimizer("sgd", groups, 0.0), Error);
  EXPECT_NO_THROW(make_optimizer("momentum", groups, 0.0));
  EXPECT_THROW(make_optimizer("lamb", groups, 0.9), Error);
  // timm's "nesterov" is its "sgd" (a timm args.yaml may hold either)
  auto nesterov = make_optimizer("nesterov", groups, 0.9);
  ASSERT_NE(dynamic_cast<SGD*>(nesterov.get()), nullptr);
  EXPECT_TRUE(dynamic_cast<SGD*>(nesterov.get())->nesterov);
  EXPECT_THROW(make_optimizer("nesterov", groups, 0.0), Error);
  EXPECT_EQ(hg::train::config_from_yaml("opt: nesterov\n", "x.yaml").opt, "nesterov");
}

// timm lowercases the optimizer's name (create_optimizer_v2), so "AdamW" is adamw there; here too,
// from a file and from the command line, and args.yaml keeps the lowercase name.
TEST(Schedule, OptimizerNamesInAnyCase) {
  EXPECT_EQ(hg::train::config_from_yaml("opt: AdamW\n", "x.yaml").opt, "adamw");
  EXPECT_EQ(hg::train::config_from_yaml("opt: SGD\n", "x.yaml").opt, "sgd");
  hg::train::Config c = hg::train::config_from_yaml("opt: adamw\n", "x.yaml");
  hg::train::apply_overrides(c, {"--opt", "Nesterov"});
  EXPECT_EQ(c.opt, "nesterov");
  EXPECT_THROW(hg::train::config_from_yaml("opt: Adam\n", "x.yaml"), hg::Error);  // still no adam
}

// Gradient accumulation as timm's train.py: an epoch's last micro-batches make an update even
// when fewer than grad_accum_steps, and their losses are divided by their own count.
TEST(Schedule, PartialLastUpdate) {
  EXPECT_EQ(updates_per_epoch(10009, 32), 313);  // ImageNet at 128 x 32
  EXPECT_EQ(updates_per_epoch(64, 32), 2);
  EXPECT_EQ(updates_per_epoch(5, 1), 5);
  EXPECT_THROW(updates_per_epoch(0, 2), Error);
  EXPECT_EQ(micro_batches_of_update(0, 10009, 32), 32);
  EXPECT_EQ(micro_batches_of_update(9983, 10009, 32), 32);  // the last full update ends here
  EXPECT_EQ(micro_batches_of_update(9984, 10009, 32), 25);  // the last 25 micro-batches
  EXPECT_EQ(micro_batches_of_update(10008, 10009, 32), 25);
  EXPECT_EQ(micro_batches_of_update(63, 64, 32), 32);  // no remainder
  EXPECT_EQ(micro_batches_of_update(4, 5, 1), 1);
}

// ---- timm's cycles, k-decay and noise (lr_cycle_*, lr_k_decay, lr_noise*) ----------------------
// Expected values: timm 1.0.31's schedulers' _get_lr (cycles, k-decay) and step() (noise), and
// torch 2's torch.randn(1, generator=g), printed with repr.

// torch's CPU generator after manual_seed(s), draw after draw (the second is the first pair's
// cached sin half): the same floats as torch's; a seed counts by its low 32 bits, as torch's.
TEST(Schedule, TorchCpuRandnAsTorch) {
  const std::vector<std::pair<uint64_t, std::vector<double>>> want = {
      {0, {1.5409960746765137, -0.293428897857666, -2.1787893772125244}},
      {42, {0.33669036626815796, 0.12880940735340118, 0.23446236550807953}},
      {4294967338, {0.33669036626815796, 0.12880940735340118, 0.23446236550807953}}};
  for (const auto& [seed, values] : want) {
    TorchCpuRandn g(seed);
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(g.next(), values[i]) << seed << " " << i;
  }
}

namespace {

// schedule()'s, with cycles of 10 (epochs or updates)
LrSchedule cycles(const std::string& kind, double mul, double decay, int64_t limit,
                  double warmup_t) {
  LrSchedule s = schedule(kind, warmup_t);
  s.t_total = 10;
  s.cycle_mul = mul;
  s.cycle_decay = decay;
  s.cycle_limit = limit;
  return s;
}

}  // namespace

// Cycles of equal length restart at lr x lr_cycle_decay^i; with lr_cycle_mul 2 each is twice the
// one before (10, 20, 40), and after lr_cycle_limit of them the lr stays at min_lr.
TEST(Schedule, CosineCyclesAsTimm) {
  expect_values(cycles("cosine", 1, 0.5, 3, 2), {{1, 0.5005},
                                                 {2, 0.905463412215599},
                                                 {5, 0.505},
                                                 {9, 0.034227024433899},
                                                 {10, 0.5},
                                                 {13, 0.39900738681165593},
                                                 {20, 0.25},
                                                 {25, 0.13},
                                                 {29, 0.015873218044581576},
                                                 {30, 0.01},
                                                 {35, 0.01}});
  expect_values(cycles("cosine", 2, 0.5, 3, 0), {{5, 0.505},
                                                 {10, 0.5},
                                                 {15, 0.4282411613907041},
                                                 {29, 0.013016356554191274},
                                                 {30, 0.25},
                                                 {31, 0.24963008004797538},
                                                 {45, 0.1759220118838108},
                                                 {69, 0.010369919952024645},
                                                 {70, 0.01},
                                                 {75, 0.01}});
  LrSchedule prefix = cycles("cosine", 1.5, 0.7, 3, 3);
  prefix.warmup_prefix = true;
  expect_values(prefix, {{2, 0.667},
                         {3, 1.0},
                         {12, 0.034227024433899},
                         {13, 0.7},
                         {20, 0.39106231982734047},
                         {28, 0.48999999999999994},
                         {29, 0.4876643364979768},
                         {40, 0.22491316881576318},
                         {49, 0.015244575823886634},
                         {50, 0.010584627937642192},
                         {60, 0.01}});
}

// lr_cycle_mul < 1: the cycles shrink (10, 5, 2.5, ...) and end at t = 10 / (1 - 0.5) = 20, where
// timm's log fails (a math domain error); min_lr from there on here.
TEST(Schedule, ShrinkingCyclesEndAtMinLr) {
  const LrSchedule s = cycles("cosine", 0.5, 0.5, 10, 0);
  expect_values(s, {{3, 0.7959536998847742},
                    {10, 0.5},
                    {14, 0.0567908363781379},
                    {15, 0.25},
                    {17, 0.03291796067500632},
                    {19, 0.04436169610234237}});
  EXPECT_EQ(s.at(20), 0.01);
  EXPECT_EQ(s.at(25), 0.01);
}

// tanh's cycles; without warmup_prefix its warmup ends at the curve's value at warmup_t, with it at
// lr, the cycles counted from the warmup's end.
TEST(Schedule, TanhCyclesAsTimm) {
  expect_values(cycles("tanh", 1.5, 0.5, 2, 3), {{1, 0.3338893344569461},
                                                 {3, 0.9996680033708382},
                                                 {5, 0.9821936521375294},
                                                 {9, 0.02780634786247063},
                                                 {10, 0.49999959255126647},
                                                 {12, 0.4999941360973126},
                                                 {20, 0.33377062069525043},
                                                 {24, 0.014564820079082674},
                                                 {25, 0.01},
                                                 {30, 0.01}});
  LrSchedule prefix = cycles("tanh", 1, 0.5, 2, 2);
  prefix.t_total = 8;
  prefix.warmup_prefix = true;
  expect_values(prefix, {{1, 0.5005},
                         {2, 0.9999991767872526},
                         {6, 0.9821936521375294},
                         {10, 0.49999959255126647},
                         {11, 0.4999950363044193},
                         {17, 0.02436299306816459},
                         {18, 0.01},
                         {20, 0.01}});
}

// k-decay: t^k / T^k in place of t / T in cosine and poly (tanh has none, as timm's).
TEST(Schedule, KDecayAsTimm) {
  LrSchedule cosine = cycles("cosine", 1, 0.5, 1, 0);
  cosine.k_decay = 2;
  expect_values(
      cosine,
      {{3, 0.9803453744100868}, {5, 0.855017856687341}, {9, 0.09559511573409195}, {10, 0.01}});
  LrSchedule poly = cycles("poly", 1, 0.5, 2, 0);
  poly.k_decay = 0.5;
  poly.decay_rate = 2;  // the power
  expect_values(poly, {{3, 0.21250933613977113},
                       {5, 0.09492857325063593},
                       {9, 0.01260706985998268},
                       {10, 0.5},
                       {15, 0.05203535443718345},
                       {20, 0.01}});
  LrSchedule tanh = cycles("tanh", 1, 0.5, 1, 0), tanh_k = tanh;
  tanh_k.k_decay = 2;
  EXPECT_EQ(tanh_k.at(5), tanh.at(5));
}

// lr noise as timm's step() adds it: lr(t) x (1 + n) for t in [3, 7) (lr_noise [0.3, 0.7] of 10),
// n drawn with seed 42 + t; from t = 5 on for a single start (every sched but none: step here,
// n's std 2 bounded by 0.1). t = 0, never stepped, has none.
TEST(Schedule, NoiseAsTimm) {
  LrSchedule s = cycles("cosine", 1, 0.5, 1, 2);
  s.noise_range = {3.0, 7.0};
  s.noise_seed = 42;
  expect_values(s, {{1, 0.5005},
                    {2, 0.905463412215599},
                    {3, 0.8207681603605096},
                    {4, 0.5712282285489259},
                    {6, 0.5345887829549891},
                    {7, 0.21404630011522585},
                    {8, 0.10453658778440106}});
  LrSchedule step;
  step.kind = "step";
  step.lr = 1.0;
  step.decay_t = 3;
  step.decay_rate = 0.5;
  step.noise_range = {5.0};
  step.noise_pct = 0.1;
  step.noise_std = 2.0;
  step.noise_seed = 7;
  expect_values(step, {{1, 1.0},
                       {4, 0.5},
                       {5, 0.5479254871606827},
                       {6, 0.26074257120490074},
                       {9, 0.12190094054676592},
                       {20, 0.014347857213579118}});
  for (double t = 5; t < 40; ++t) EXPECT_LT(std::fabs(step.noise(t)), 0.1) << t;
  step.noise_range = {0.0};
  EXPECT_EQ(step.at(0), 1.0);
  EXPECT_EQ(step.noise(0), 0.0);
  step.kind = "none";
  EXPECT_EQ(step.at(6), 1.0);
}

// The config's lr_noise is a fraction of epochs, in updates when stepping per update (timm's
// noise x t_initial): [0.5, 1] of 2 epochs of 3 updates is updates 3 to 5; seeded with seed + t.
TEST(Schedule, NoisePerUpdateFromTheConfig) {
  Config c;
  c.lr = 1.0;
  c.min_lr = 0.01;
  c.warmup_epochs = 0;
  c.epochs = 2;
  c.sched_on_updates = true;
  c.lr_noise = {0.5, 1.0};
  c.seed = 11;
  Config quiet = c;
  quiet.lr_noise = {};
  const RunSchedule r(c, 3), q(quiet, 3);
  LrSchedule drawn;
  drawn.noise_range = {3.0, 6.0};
  drawn.noise_seed = 11;
  for (int64_t u = 0; u < 8; ++u) {
    const double n = drawn.noise(static_cast<double>(u)), plain = q.lr(u / 3, u % 3, u);
    EXPECT_EQ(n != 0, u >= 3 && u < 6) << u;
    EXPECT_EQ(r.lr(u / 3, u % 3, u), plain + plain * n) << "update " << u;
  }
  c.sched_on_updates = false;  // per epoch: epoch 1 of [1, 2)
  const RunSchedule e(c, 3);
  drawn.noise_range = {1.0, 2.0};
  EXPECT_EQ(e.lr(0, 2, 2), 1.0);
  const double plain = RunSchedule(quiet, 3).lr(1, 0, 3);
  EXPECT_NE(e.lr(1, 0, 3), plain);
  EXPECT_EQ(e.lr(1, 0, 3), plain + plain * drawn.noise(1));
}

// With cycles the run trains them all (timm's get_cycle_length), + warmup_prefix's warmup and
// cooldown_epochs; step, multistep and none ignore the cycles; lr_cycle_limit 0 counts one cycle.
TEST(Schedule, RunEpochsWithCyclesAsTimm) {
  Config c;
  c.epochs = 10;
  c.warmup_epochs = 3;
  c.lr_cycle_limit = 3;
  EXPECT_EQ(run_epochs(c), 30);
  EXPECT_EQ(run_epochs_text(c), "30 epochs (lr_cycle_limit 3 cycles of epochs 10)");
  c.lr_cycle_mul = 2;
  EXPECT_EQ(run_epochs(c), 70);
  c.lr_cycle_mul = 1.5;  // 10 + 15 + 22.5, floored
  c.cooldown_epochs = 2;
  EXPECT_EQ(run_epochs(c), 49);
  EXPECT_EQ(run_epochs_text(c),
            "49 epochs (47 of lr_cycle_limit 3 cycles from epochs 10 x lr_cycle_mul 1.5 + "
            "cooldown_epochs 2)");
  c.warmup_prefix = true;
  EXPECT_EQ(run_epochs(c), 52);
  c.sched = "tanh";
  EXPECT_EQ(run_epochs(c), 52);
  for (const char* sched : {"step", "multistep", "none"}) {
    c.sched = sched;
    EXPECT_EQ(run_epochs(c), 13) << sched;
  }
  c.sched = "poly";
  c.warmup_prefix = false;
  c.cooldown_epochs = 0;
  c.lr_cycle_limit = 0;
  c.lr_cycle_mul = 1;
  EXPECT_EQ(run_epochs(c), 10);
  EXPECT_EQ(run_epochs_text(c), "epochs 10");
  // the epochs that make a run reach an epoch: 2 cycles of x1.5 from 4 epochs are 10
  c.lr_cycle_limit = 2;
  c.lr_cycle_mul = 1.5;
  EXPECT_EQ(epochs_for_run(c, 10), 4);
  EXPECT_EQ(epochs_for_run(c, 11), 5);
  c.lr_cycle_limit = 1;
  c.lr_cycle_mul = 1;
  c.cooldown_epochs = 3;
  EXPECT_EQ(epochs_for_run(c, 10), 7);
}

// ---- sched plateau: timm's PlateauLRScheduler (torch's ReduceLROnPlateau inside) ----------------

namespace {

// A plateau schedule from lr 1, with `patience` and `decay_rate`, maximizing unless `minimize`.
LrSchedule plateau(int64_t patience, double decay_rate, bool minimize = false) {
  LrSchedule s;
  s.kind = "plateau";
  s.lr = 1.0;
  s.warmup_lr = 1e-3;
  s.warmup_t = 0;
  s.patience = patience;
  s.decay_rate = decay_rate;
  s.minimize = minimize;
  return s;
}

// The lr of epochs 0 .. metrics.size(): each epoch's metric counted at its end, as the trainer
// does (RunSchedule::end_epoch), and the next epoch's lr read from the state.
std::vector<double> plateau_lrs(const LrSchedule& s, const std::vector<double>& metrics) {
  PlateauState st = s.plateau_start();
  std::vector<double> lrs = {s.at(0, st)};
  for (size_t e = 0; e < metrics.size(); ++e) {
    s.plateau_step(st, static_cast<int64_t>(e), metrics[e]);
    lrs.push_back(s.at(static_cast<double>(e + 1), st));
  }
  return lrs;
}

void expect_lrs(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t e = 0; e < want.size(); ++e) EXPECT_NEAR(got[e], want[e], 1e-15) << "epoch " << e;
}

}  // namespace

// Values of timm 1.0.31's create_scheduler_v2(sched='plateau') stepped as its train.py steps it
// (step(epoch + 1, metric) after each epoch): a warmup of 2 whose metrics are not counted, 11 the
// first best, 11.0005 within the 1e-4 threshold (a bad epoch), decays x 0.5 after 2 bad epochs
// (patience 1), floored at min_lr 0.2; and in min mode with noise from epoch 4 (lr_noise [0.5] of
// 8 epochs, seed 3, lr_noise_pct 0.5), 3.9999 no new best under 4.
TEST(Schedule, PlateauAsTimm) {
  LrSchedule s = plateau(1, 0.5);
  s.warmup_t = 2;
  s.min_lr = 0.2;
  expect_lrs(plateau_lrs(s, {10, 11, 11, 11.0005, 9, 9, 9, 9, 9, 9}),
             {0.001, 0.5005, 1.0, 1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.2, 0.2});
  LrSchedule n = plateau(0, 0.1, true);
  n.noise_range = {4.0};
  n.noise_seed = 3;
  n.noise_pct = 0.5;
  const std::vector<double> got = plateau_lrs(n, {5, 4, 4, 4, 3.9999, 3, 3});
  const std::vector<double> timm = {1.0,
                                    1.0,
                                    1.0,
                                    0.1,
                                    0.00853204905986786,
                                    0.0012712765038013461,
                                    0.0010447275377810004,
                                    6.97730749845505e-05};
  ASSERT_EQ(got.size(), timm.size());
  for (size_t e = 0; e < timm.size(); ++e) EXPECT_NEAR(got[e], timm[e], 1e-15 * timm[e]) << e;
}

// A metric that keeps improving by more than the threshold never decays the lr, upwards (top-1)
// in max mode and downwards (a loss) in min mode; the other direction is a bad epoch every time.
TEST(Schedule, PlateauImprovingMetricsKeepTheLr) {
  std::vector<double> rising, falling;
  for (int e = 0; e < 12; ++e) {
    rising.push_back(10.0 + e);
    falling.push_back(10.0 - 0.5 * e);
  }
  for (double lr : plateau_lrs(plateau(0, 0.1), rising)) EXPECT_EQ(lr, 1.0);
  for (double lr : plateau_lrs(plateau(0, 0.1, true), falling)) EXPECT_EQ(lr, 1.0);
  // the wrong way round: the first epoch is the best, each later one bad (patience 0: a decay
  // at each; min_lr 0)
  const std::vector<double> up = plateau_lrs(plateau(0, 0.5, true), rising);
  for (size_t e = 2; e < up.size(); ++e) EXPECT_DOUBLE_EQ(up[e], up[e - 1] * 0.5) << e;
}

// A flat metric: the first counted epoch sets the best, then every patience + 1 bad epochs in a
// row decay the lr once (the count restarts after a decay).
TEST(Schedule, PlateauFlatMetricDecaysEveryPatiencePlusOneEpochs) {
  for (int64_t patience : {0, 1, 3}) {
    // (x 0.5: far above torch's eps of 1e-8 over these epochs, PlateauStopsAtMinLr)
    const std::vector<double> lrs =
        plateau_lrs(plateau(patience, 0.5), std::vector<double>(14, 7.0));
    double want = 1.0;
    for (size_t e = 1; e < lrs.size(); ++e) {
      // epoch e's lr follows the metrics of epochs 0 .. e - 1: e - 1 of them bad
      const int64_t bad = static_cast<int64_t>(e) - 1;
      if (bad > 0 && bad % (patience + 1) == 0) want *= 0.5;
      EXPECT_NEAR(lrs[e], want, 1e-12 * want) << "patience " << patience << ", epoch " << e;
    }
  }
}

// Noise within the relative threshold 1e-4 is no improvement: a top-1 that stays above its first
// value by less than 1e-4 of it decays as a flat one does, one rising by 2e-4 of its best an
// epoch does not; in min mode the same for a loss a hair below its first value.
TEST(Schedule, PlateauChangesWithinTheThresholdAreNoNewBest) {
  std::vector<double> wobble_top1 = {50}, wobble_loss = {2}, climb;
  for (int e = 1; e < 8; ++e) {
    const double within = e % 2 == 0 ? 0.9e-4 : 0.5e-4;  // above the best, but not by 1e-4 of it
    wobble_top1.push_back(50 * (1 + within));
    wobble_loss.push_back(2 * (1 - within));
  }
  double b = 50;
  for (int e = 0; e < 8; ++e) climb.push_back(b *= 1 + 2e-4);
  const std::vector<double> flat = plateau_lrs(plateau(1, 0.1), std::vector<double>(8, 50.0));
  EXPECT_LT(flat.back(), 1.0);
  EXPECT_EQ(plateau_lrs(plateau(1, 0.1), wobble_top1), flat);
  EXPECT_EQ(plateau_lrs(plateau(1, 0.1, true), wobble_loss), flat);
  for (double lr : plateau_lrs(plateau(1, 0.1), climb)) EXPECT_EQ(lr, 1.0);
}

// The decays stop at min_lr: the last one lands on it, and an lr within torch's eps (1e-8) above
// it is left as it is rather than lowered by a hair.
TEST(Schedule, PlateauStopsAtMinLr) {
  LrSchedule s = plateau(0, 0.1);
  s.min_lr = 0.003;
  const std::vector<double> lrs = plateau_lrs(s, std::vector<double>(8, 1.0));
  EXPECT_NEAR(lrs[2], 0.1, 1e-15);
  EXPECT_NEAR(lrs[3], 0.01, 1e-15);
  for (size_t e = 4; e < lrs.size(); ++e) EXPECT_EQ(lrs[e], 0.003) << e;
  s.min_lr = 0.1 - 5e-9;  // the first decay would lower 0.1 by less than eps: none is made
  const std::vector<double> near = plateau_lrs(s, std::vector<double>(6, 1.0));
  for (size_t e = 2; e < near.size(); ++e) EXPECT_EQ(near[e], near[2]) << e;
  EXPECT_NEAR(near[2], 0.1, 1e-15);
}

// The warmup's lr is its line to lr (no noise), its epochs' metrics are not counted (a wild one
// changes nothing), and the plateau starts from the line's last value.
TEST(Schedule, PlateauWarmupThenPlateau) {
  LrSchedule s = plateau(0, 0.1);
  s.warmup_t = 3;
  s.noise_range = {0.0};
  const std::vector<double> calm = plateau_lrs(s, {1, 1, 1, 5, 5, 4});
  const std::vector<double> wild = plateau_lrs(s, {100, 0, 100, 5, 5, 4});
  EXPECT_EQ(calm, wild);
  for (int e = 0; e < 3; ++e) EXPECT_EQ(calm[e], 1e-3 + e * ((1.0 - 1e-3) / 3)) << e;
  EXPECT_EQ(s.plateau_start().lr, 1e-3 + 3 * ((1.0 - 1e-3) / 3));
  EXPECT_EQ(calm[3], s.plateau_start().lr);  // the warmup's end: no noise yet
  // epoch 3's metric (5) is the first best, epoch 4's equal one is bad: epoch 5 decays, noised
  const double n4 = s.noise(4), n5 = s.noise(5);
  ASSERT_NE(n4, 0.0);
  EXPECT_EQ(calm[4], calm[3] + calm[3] * n4);
  EXPECT_NEAR(calm[5], 0.1 * calm[3] * (1 + n5), 1e-15);
}

// torch's cooldown (timm passes 0; the trainer too): after a decay, `cooldown` epochs' bad epochs
// are not counted, so the next decay comes that much later.
TEST(Schedule, PlateauCooldownDelaysTheNextDecay) {
  LrSchedule s = plateau(0, 0.5);
  const std::vector<double> flat(10, 3.0);
  const std::vector<double> none = plateau_lrs(s, flat);
  s.cooldown = 2;
  const std::vector<double> cooled = plateau_lrs(s, flat);
  // both decay first at epoch 2 (epoch 1's metric bad); then every epoch, or every third
  EXPECT_EQ(none[2], 0.5);
  EXPECT_EQ(none[3], 0.25);
  EXPECT_EQ(cooled[2], 0.5);
  EXPECT_EQ(cooled[3], 0.5);
  EXPECT_EQ(cooled[4], 0.5);
  EXPECT_EQ(cooled[5], 0.25);
  EXPECT_EQ(cooled[8], 0.125);
}

// From the config: mode by what ranks the epochs (top-1, or the train loss without validation),
// patience_epochs, no cooldown (cooldown_epochs is not the plateau's, as timm), and the run's
// epochs: epochs + warmup_epochs with warmup_prefix (timm's num_epochs), never cooldown_epochs.
TEST(Schedule, PlateauFromTheConfigAsTimm) {
  Config c;
  c.sched = "plateau";
  c.lr = 1.0;
  c.warmup_epochs = 0;
  c.patience_epochs = 1;
  c.cooldown_epochs = 3;
  c.epochs = 5;
  EXPECT_EQ(run_epochs(c), 5);
  c.warmup_prefix = true;
  c.warmup_epochs = 2;
  EXPECT_EQ(run_epochs(c), 7);
  c.warmup_prefix = false;
  c.warmup_epochs = 0;
  const std::vector<double> falling = {9, 8, 7, 6, 5, 4};
  RunSchedule by_top1(c, 3);
  c.val_split = "";
  RunSchedule by_loss(c, 3);
  for (size_t e = 0; e < falling.size(); ++e) {
    by_top1.end_epoch(static_cast<int64_t>(e), falling[e]);
    by_loss.end_epoch(static_cast<int64_t>(e), falling[e]);
  }
  // top-1 falling: bad after the first, 5 bad epochs with patience 1 (cooldown 0): two decays
  EXPECT_NEAR(by_top1.lr(6, 0, 18), 0.01, 1e-15);
  EXPECT_EQ(by_top1.plateau()->best, 9);
  EXPECT_EQ(by_loss.lr(6, 0, 18), 1.0);  // a falling loss improves
  EXPECT_EQ(by_loss.plateau()->best, 4);
  // other scheds hold no state and ignore the metric
  c.sched = "cosine";
  RunSchedule cosine(c, 3);
  const double before = cosine.lr(2, 0, 6);
  cosine.end_epoch(1, 0.0);
  EXPECT_FALSE(cosine.plateau().has_value());
  EXPECT_EQ(cosine.lr(2, 0, 6), before);
}

// A resume: a schedule set to the state after some epochs (the checkpoint's) goes on with the
// lrs of the one never stopped, where one started afresh would not.
TEST(Schedule, PlateauStateSetOnAResumeGoesOnAsTheUnstoppedRun) {
  Config c;
  c.sched = "plateau";
  c.lr = 1.0;
  c.warmup_epochs = 1;
  c.patience_epochs = 1;
  c.decay_rate = 0.5;
  c.lr_noise = {0.4};
  c.epochs = 10;
  const std::vector<double> top1 = {10, 20, 21, 21, 21, 30, 30, 30, 30, 30};
  RunSchedule straight(c, 3), first(c, 3);
  std::vector<double> want, got;
  for (int64_t e = 0; e < 10; ++e) {
    want.push_back(straight.lr(e, 0, e * 3));
    straight.end_epoch(e, top1[static_cast<size_t>(e)]);
  }
  for (int64_t e = 0; e < 5; ++e) first.end_epoch(e, top1[static_cast<size_t>(e)]);
  RunSchedule resumed(c, 3), afresh(c, 3);
  resumed.set_plateau(*first.plateau());
  bool differs = false;
  for (int64_t e = 5; e < 10; ++e) {
    EXPECT_EQ(resumed.lr(e, 0, e * 3), want[static_cast<size_t>(e)]) << "epoch " << e;
    differs = differs || afresh.lr(e, 0, e * 3) != want[static_cast<size_t>(e)];
    resumed.end_epoch(e, top1[static_cast<size_t>(e)]);
    afresh.end_epoch(e, top1[static_cast<size_t>(e)]);
  }
  EXPECT_TRUE(differs) << "the metrics before the stop must matter for this test";
  EXPECT_EQ(*resumed.plateau(), *straight.plateau());
  c.sched = "cosine";
  RunSchedule cosine(c, 3);
  EXPECT_THROW(cosine.set_plateau(*first.plateau()), Error);
}
