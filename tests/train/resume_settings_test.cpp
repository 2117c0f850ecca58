// reconcile_resume (train/resume_settings.h): which keys a resumed run may change.
#include "train/resume_settings.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "test_util.h"
#include "train/config.h"
#include "train/schedule.h"

namespace {

hg::train::Config smoke() {
  return hg::train::load_config(std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml");
}

}  // namespace

// How the GPU runs the same step may change on a resume, as the device may: a graph replays the
// eager step (tests/gpu/step_graph_test.cpp), and a timed GEMM algorithm changes the last bits
// only. Both were refused as "keys that shape its results" (a new user's report), even on a CPU
// where they do nothing. A key that does shape the results is still refused.
TEST(ResumeSettings, GpuExecutionSwitchesMayChangeButNotTheRecipe) {
  const hg::train::Config recorded = smoke();
  hg::train::Config session = recorded;
  session.cuda_graph = !recorded.cuda_graph;
  session.gemm_autotune = !recorded.gemm_autotune;
  const hg::train::ResumeSettings r =
      hg::train::reconcile_resume(recorded, "args.yaml", session, 1, 0, 3, 3);
  EXPECT_EQ(r.session.cuda_graph, session.cuda_graph);
  EXPECT_EQ(r.session.gemm_autotune, session.gemm_autotune);
  session.weight_decay = recorded.weight_decay * 2;
  const std::string msg = hg::test::error_of(
      [&] { hg::train::reconcile_resume(recorded, "args.yaml", session, 1, 0, 3, 3); });
  EXPECT_NE(msg.find("weight_decay"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("gemm_autotune"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("cuda_graph"), std::string::npos) << msg;
}

// An older checkpoint of a run extended since (epochs 1, then resumed with --epochs 3): the run's
// args.yaml records the first session's schedule in schedule_history, which checkpoint-1's stored
// config (written before) does not hold. Resuming checkpoint-1 with that args.yaml was refused
// ("schedule_history of this session differs"), and so was every command the message offered.
// A history that disagrees up to the checkpoint is still refused.
TEST(ResumeSettings, AnOlderCheckpointOfAnExtendedRunTakesTheRunsLaterRecord) {
  hg::train::Config recorded = smoke();  // checkpoint-1's: epochs 1, no history
  recorded.epochs = 1;
  hg::train::Config session = recorded;  // the run's args.yaml after the extension, --epochs 4
  session.epochs = 4;
  // the segment the run's first session ran (until epoch 1), and a later session's
  const hg::train::ScheduleSegment first{1,
                                         0,
                                         1,
                                         recorded.lr.value(),
                                         recorded.sched,
                                         recorded.warmup_epochs,
                                         recorded.warmup_lr,
                                         recorded.min_lr,
                                         recorded.sched_on_updates};
  hg::train::ScheduleSegment later = first;
  later.until_epoch = 2;
  later.epochs = 3;
  session.schedule_history = {first, later};
  const hg::train::ResumeSettings r =
      hg::train::reconcile_resume(recorded, "checkpoint-1.safetensors", session, 1, 0, 3, 3);
  ASSERT_EQ(r.session.schedule_history.size(), 1u);  // what ran before; the later one dropped
  EXPECT_TRUE(r.session.schedule_history[0] == first);
  EXPECT_EQ(r.session.epochs, 4);
  // a record that says something else ran before the checkpoint
  session.schedule_history[0].lr = first.lr * 2;
  const std::string msg = hg::test::error_of([&] {
    hg::train::reconcile_resume(recorded, "checkpoint-1.safetensors", session, 1, 0, 3, 3);
  });
  EXPECT_NE(msg.find("schedule_history of this session differs"), std::string::npos) << msg;
}

// A resume that changes decay_rate is a schedule change as one of lr is: the step schedule that
// ran until the position joins schedule_history (with its decay_rate), args.yaml takes the new
// value and reruns both, and the lr on each side of the boundary is each schedule's.
TEST(ResumeSettings, AChangedDecayRateIsRecordedInTheHistory) {
  hg::train::Config recorded = smoke();
  recorded.sched = "step";
  recorded.epochs = 10;
  recorded.warmup_epochs = 0;
  recorded.lr = 0.1;
  recorded.decay_epochs = 2;
  recorded.decay_rate = 0.5;
  hg::train::Config session = recorded;
  session.decay_rate = 0.1;
  // 5 epochs of 3 updates done
  const hg::train::ResumeSettings r =
      hg::train::reconcile_resume(recorded, "args.yaml", session, 5, 0, 15, 3);
  ASSERT_EQ(r.session.schedule_history.size(), 1u);
  const hg::train::ScheduleSegment& ran = r.session.schedule_history[0];
  EXPECT_EQ(ran.until_epoch, 5);
  EXPECT_EQ(ran.until_step, 0);
  EXPECT_EQ(ran.decay_rate, 0.5);
  EXPECT_EQ(r.args.decay_rate, 0.1);
  EXPECT_EQ(r.args.schedule_history, r.session.schedule_history);
  EXPECT_EQ(hg::train::config_from_yaml(hg::train::to_yaml(r.args), "args.yaml"), r.args);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("decay_rate 0.5 -> 0.1; lr there 0.025 -> 0.001"), std::string::npos)
      << r.notes[0];
  const hg::train::RunSchedule lrs(r.session, 3);
  EXPECT_NEAR(lrs.lr(4, 2, 14), 0.1 * 0.5 * 0.5, 1e-15);  // epoch 5: 4 // 2 decays of 0.5
  EXPECT_NEAR(lrs.lr(5, 0, 15), 0.1 * 0.1 * 0.1, 1e-15);  // epoch 6: 5 // 2 decays of 0.1
  EXPECT_NEAR(lrs.lr(6, 0, 18), 0.1 * 0.1 * 0.1 * 0.1, 1e-15);
  // the same keys again: nothing new to record
  const hg::train::ResumeSettings again =
      hg::train::reconcile_resume(r.args, "args.yaml", r.args, 7, 0, 21, 3);
  EXPECT_EQ(again.session.schedule_history, r.session.schedule_history);
  EXPECT_FALSE(again.args_changed);
}

// cooldown_epochs changes how long a run is, not its lr: a resume may change it (a finished run
// then trains the epochs it adds), with nothing for schedule_history; warmup_prefix changes the
// lr, so the schedule that ran without it is recorded.
TEST(ResumeSettings, CooldownChangesTheLengthWarmupPrefixTheSchedule) {
  hg::train::Config recorded = smoke();  // cosine, warmup_epochs 1
  recorded.epochs = 4;
  hg::train::Config session = recorded;
  session.cooldown_epochs = 2;
  hg::train::ResumeSettings r =
      hg::train::reconcile_resume(recorded, "args.yaml", session, 4, 0, 12, 3);
  EXPECT_TRUE(r.session.schedule_history.empty());
  EXPECT_EQ(r.args.cooldown_epochs, 2);
  EXPECT_TRUE(r.args_changed);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("cooldown_epochs 0 -> 2"), std::string::npos) << r.notes[0];
  session.warmup_prefix = true;
  r = hg::train::reconcile_resume(recorded, "args.yaml", session, 2, 0, 6, 3);
  ASSERT_EQ(r.session.schedule_history.size(), 1u);
  EXPECT_FALSE(r.session.schedule_history[0].warmup_prefix);
  EXPECT_TRUE(r.args.warmup_prefix);
}

// A resume may add cycles or noise: the schedule that ran without them joins schedule_history
// (lr_cycle_limit 1, no noise), and the new keys' lr holds from the position on: a second cosine
// cycle from epoch 5 of 4 + 4, at lr x lr_cycle_decay; a run of more epochs than the recorded one.
TEST(ResumeSettings, CyclesAndNoiseAreScheduleKeys) {
  hg::train::Config recorded = smoke();  // cosine, warmup_epochs 1, seed 0
  recorded.epochs = 4;
  recorded.lr = 0.1;
  recorded.min_lr = 0;
  hg::train::Config session = recorded;
  session.lr_cycle_limit = 2;
  session.lr_noise = {0.5};
  const hg::train::ResumeSettings r =
      hg::train::reconcile_resume(recorded, "args.yaml", session, 3, 0, 9, 3);
  ASSERT_EQ(r.session.schedule_history.size(), 1u);
  EXPECT_EQ(r.session.schedule_history[0].lr_cycle_limit, 1);
  EXPECT_TRUE(r.session.schedule_history[0].lr_noise.empty());
  EXPECT_EQ(r.args.lr_cycle_limit, 2);
  EXPECT_EQ(hg::train::run_epochs(r.session), 8);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("lr_noise [] -> [0.5]"), std::string::npos) << r.notes[0];
  EXPECT_NE(r.notes[0].find("lr_cycle_limit 1 -> 2"), std::string::npos) << r.notes[0];
  const hg::train::RunSchedule lrs(r.session, 3), before(recorded, 3);
  EXPECT_EQ(lrs.lr(2, 0, 6), before.lr(2, 0, 6));  // epoch 3: before the resume, no noise
  hg::train::LrSchedule second;  // epoch 5 (t = 4): the second cycle's start, with t's noise
  second.noise_range = {2.0};
  second.noise_seed = 0;
  const double top = 0.1 * 0.5;
  EXPECT_NEAR(lrs.lr(4, 0, 12), top + top * second.noise(4), 1e-15);
  EXPECT_NE(second.noise(4), 0.0);
}

// sched none has no noise (timm makes no scheduler for it; LrSchedule::noise is 0 under it), but a
// resume that changed only lr_noise, lr_noise_pct or lr_noise_std under it added a
// schedule_history entry and said "the schedule changes". It is said as the change of no lr it is.
TEST(ResumeSettings, NoiseKeysUnderSchedNoneChangeNoLr) {
  hg::train::Config recorded = smoke();
  recorded.sched = "none";
  recorded.warmup_epochs = 0;
  recorded.epochs = 4;
  hg::train::Config session = recorded;
  session.lr_noise = {0.25, 0.75};
  session.lr_noise_pct = 0.5;
  session.lr_noise_std = 2;
  const hg::train::ResumeSettings r =
      hg::train::reconcile_resume(recorded, "args.yaml", session, 2, 0, 6, 3);
  EXPECT_TRUE(r.session.schedule_history.empty());
  EXPECT_TRUE(r.args.schedule_history.empty());
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0].find("the schedule changes"), std::string::npos) << r.notes[0];
  EXPECT_NE(r.notes[0].find("lr_noise [] -> [0.25, 0.75]"), std::string::npos) << r.notes[0];
  EXPECT_NE(r.notes[0].find("it changes neither the run's length nor its learning rates"),
            std::string::npos)
      << r.notes[0];
  EXPECT_EQ(r.args.lr_noise, session.lr_noise);  // args.yaml takes the new values
  // the lrs are the same, as the note says
  const hg::train::RunSchedule lrs(r.session, 3), before(recorded, 3);
  for (int64_t e = 0; e < 4; ++e) EXPECT_EQ(lrs.lr(e, 0, e * 3), before.lr(e, 0, e * 3)) << e;
  // nor do its warmup, floor, decay and cycle keys (sched none is lr throughout), nor epochs; lr
  // does
  session = recorded;
  session.warmup_epochs = 2;
  session.warmup_lr = 1e-6;
  session.min_lr = 1e-4;
  session.decay_rate = 0.5;
  session.lr_cycle_limit = 3;
  session.epochs = 5;
  const hg::train::ResumeSettings w =
      hg::train::reconcile_resume(recorded, "args.yaml", session, 2, 0, 6, 3);
  EXPECT_TRUE(w.session.schedule_history.empty());
  ASSERT_EQ(w.notes.size(), 1u);
  EXPECT_NE(w.notes[0].find("the run is 5 epochs long (was 4); it changes none of its learning "
                            "rates"),
            std::string::npos)
      << w.notes[0];
  const hg::train::RunSchedule wl(w.session, 3);
  for (int64_t e = 0; e < 4; ++e) EXPECT_EQ(wl.lr(e, 0, e * 3), before.lr(e, 0, e * 3)) << e;
  session = recorded;
  session.lr = *recorded.lr * 2;
  EXPECT_EQ(hg::train::reconcile_resume(recorded, "args.yaml", session, 2, 0, 6, 3)
                .session.schedule_history.size(),
            1u);
  // under a sched with noise the same change is a schedule change
  session = recorded;
  session.lr_noise = {0.25, 0.75};
  recorded.sched = session.sched = "cosine";
  const hg::train::ResumeSettings c =
      hg::train::reconcile_resume(recorded, "args.yaml", session, 2, 0, 6, 3);
  EXPECT_EQ(c.session.schedule_history.size(), 1u);
}

// A resume that changes cooldown_epochs alone was told "the schedule changes ...; lr there X ->
// X. args.yaml takes the new values ..., and schedule_history what ran before", though no lr
// changes and nothing joins schedule_history. The note names the key and the run's new length.
TEST(ResumeSettings, ACooldownChangeSaysWhatItChangesNotTheHistory) {
  hg::train::Config recorded = smoke();  // cosine, warmup_epochs 1
  recorded.epochs = 4;
  hg::train::Config session = recorded;
  session.cooldown_epochs = 2;
  for (const int64_t epoch : {2, 4}) {  // inside the cosine, and at its end
    SCOPED_TRACE(epoch);
    const hg::train::ResumeSettings r =
        hg::train::reconcile_resume(recorded, "args.yaml", session, epoch, 0, epoch * 3, 3);
    EXPECT_TRUE(r.session.schedule_history.empty());
    ASSERT_EQ(r.notes.size(), 1u);
    const std::string& note = r.notes[0];
    EXPECT_NE(note.find("resume: cooldown_epochs 0 -> 2 from epoch " + std::to_string(epoch + 1) +
                        " step 1"),
              std::string::npos)
        << note;
    EXPECT_NE(note.find("the run is 6 epochs long (was 4)"), std::string::npos) << note;
    EXPECT_NE(note.find("it changes none of its learning rates"), std::string::npos) << note;
    EXPECT_NE(note.find("args.yaml takes the new value with"), std::string::npos) << note;
    EXPECT_EQ(note.find("schedule_history"), std::string::npos) << note;
    EXPECT_EQ(note.find("lr there"), std::string::npos) << note;
  }
  // a change that sets the lr still says the schedule, its lr and what joins the history
  session.epochs = 6;
  const hg::train::ResumeSettings r =
      hg::train::reconcile_resume(recorded, "args.yaml", session, 2, 0, 6, 3);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("the schedule changes from epoch 3 step 1 (after 6 updates) on: "
                            "epochs 4 -> 6, cooldown_epochs 0 -> 2; the run is 8 epochs long (was "
                            "4); lr there "),
            std::string::npos)
      << r.notes[0];
  EXPECT_NE(r.notes[0].find("args.yaml takes the new values with this session's first checkpoint, "
                            "and schedule_history what ran before"),
            std::string::npos)
      << r.notes[0];
}

// A second resume from the epoch where the run's last schedule change took effect (an older
// checkpoint of a run resumed since): nothing ran with the recorded keys there, so nothing joins
// schedule_history, and the lr at that point may be the same; but the change sets later lrs
// (decay_epochs 40 -> 50: the first decay moves from epoch 41 to 51). It was said as "it changes
// neither the run's length nor its learning rates". A single key whose value is a list names "the
// new value", not "values".
TEST(ResumeSettings, AScheduleChangeWhereTheLastOneBeganIsNotSaidToChangeNoLr) {
  hg::train::Config recorded = smoke();
  recorded.sched = "step";
  recorded.warmup_epochs = 0;
  recorded.epochs = 60;
  recorded.decay_epochs = 30;
  const hg::train::ScheduleSegment first = hg::train::schedule_segment(recorded, 3, 0, "test");
  recorded.decay_epochs = 40;
  recorded.schedule_history = {first};
  hg::train::Config session = recorded;
  session.schedule_history = {};
  session.decay_epochs = 50;
  const hg::train::ResumeSettings r =
      hg::train::reconcile_resume(recorded, "args.yaml", session, 3, 0, 9, 3);
  ASSERT_EQ(r.session.schedule_history.size(), 1u);  // nothing ran with decay_epochs 40
  EXPECT_EQ(hg::train::RunSchedule(r.session, 3).lr(45, 0, 135), *recorded.lr);
  EXPECT_NE(hg::train::RunSchedule(recorded, 3).lr(45, 0, 135), *recorded.lr);
  ASSERT_EQ(r.notes.size(), 1u);
  const std::string& note = r.notes[0];
  EXPECT_EQ(note.find("changes neither"), std::string::npos) << note;
  EXPECT_EQ(note.find("none of its learning rates"), std::string::npos) << note;
  EXPECT_NE(note.find("the schedule changes from epoch 4 step 1 (after 9 updates) on: "
                      "decay_epochs 40 -> 50; lr there "),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("args.yaml takes the new value with"), std::string::npos) << note;
  EXPECT_EQ(note.find("schedule_history"), std::string::npos) << note;

  // one key, a list: "value"
  session = recorded;
  session.schedule_history = {};
  session.decay_epochs = 40;
  session.lr_noise = {0.5, 0.8};
  const hg::train::ResumeSettings n =
      hg::train::reconcile_resume(recorded, "args.yaml", session, 5, 0, 15, 3);
  ASSERT_EQ(n.notes.size(), 1u);
  EXPECT_NE(n.notes[0].find("lr_noise [] -> [0.5, 0.8]"), std::string::npos) << n.notes[0];
  EXPECT_NE(n.notes[0].find("args.yaml takes the new value with"), std::string::npos) << n.notes[0];
}

// no_resume_opt and recovery_interval are this session's (the same run, restored otherwise or
// saved more often); start_epoch is how the run began: a resume goes on at its checkpoint's
// position and may not change it (timm's --start-epoch overrides the resumed epoch), said so.
TEST(ResumeSettings, NoResumeOptAndRecoveryIntervalMayChangeStartEpochMayNot) {
  hg::train::Config recorded = smoke();
  recorded.start_epoch = 2;
  recorded.epochs = 5;
  hg::train::Config session = recorded;
  session.no_resume_opt = true;
  session.recovery_interval = 50;
  const hg::train::ResumeSettings r =
      hg::train::reconcile_resume(recorded, "args.yaml", session, 3, 0, 9, 3);
  EXPECT_TRUE(r.session.no_resume_opt);
  EXPECT_EQ(r.session.recovery_interval, 50);
  EXPECT_FALSE(r.args.no_resume_opt);  // args.yaml keeps the run's
  EXPECT_EQ(r.args.recovery_interval, 0);
  // initial_checkpoint is not loaded by a resume: moved, or spelt otherwise, it refused one
  recorded.initial_checkpoint = "/data/init.safetensors";
  session.initial_checkpoint = "/mnt/other/./init.safetensors";
  const hg::train::ResumeSettings moved =
      hg::train::reconcile_resume(recorded, "args.yaml", session, 3, 0, 9, 3);
  EXPECT_EQ(moved.args.initial_checkpoint, "/data/init.safetensors");
  session.start_epoch = 0;
  const std::string msg = hg::test::error_of(
      [&] { hg::train::reconcile_resume(recorded, "args.yaml", session, 3, 0, 9, 3); });
  EXPECT_NE(msg.find("resume: start_epoch 2 -> 0 cannot change on a resume (the run's "
                     "start_epoch is from args.yaml)"),
            std::string::npos)
      << msg;
}

// A plateau run's lr follows the metrics its checkpoint counted, for the keys it counted them
// with: a resume may lengthen it (epochs, no history entry of another sched), and nothing else of
// its schedule; nor may a run switch to or from plateau. The lr the note names is the state's.
TEST(ResumeSettings, APlateauRunMayChangeItsEpochsAlone) {
  hg::train::Config recorded = smoke();
  recorded.sched = "plateau";
  hg::train::Config longer = recorded;
  longer.epochs = recorded.epochs + 3;
  hg::train::PlateauState st;
  st.lr = 1.25e-4;
  st.best = 40;
  st.bad_epochs = 2;
  const hg::train::ResumeSettings r =
      hg::train::reconcile_resume(recorded, "args.yaml", longer, 2, 0, 6, 3, st);
  EXPECT_EQ(r.session.epochs, longer.epochs);
  EXPECT_EQ(r.args.epochs, longer.epochs);
  for (const hg::train::ScheduleSegment& s : r.session.schedule_history)
    EXPECT_EQ(s.sched, "plateau");
  std::string notes;
  for (const std::string& n : r.notes) notes += n;
  EXPECT_NE(notes.find("0.000125"), std::string::npos) << notes;  // the state's lr, not lr's
  for (const auto& [key, change] :
       std::vector<std::pair<std::string, std::string>>{{"patience_epochs", "--patience-epochs=2"},
                                                        {"decay_rate", "--decay-rate=0.5"},
                                                        {"min_lr", "--min-lr=1e-6"},
                                                        {"lr", "--lr=0.01"}}) {
    hg::train::Config session = recorded;
    hg::train::apply_overrides(session, {change});
    const std::string msg = hg::test::error_of(
        [&] { hg::train::reconcile_resume(recorded, "args.yaml", session, 2, 0, 6, 3, st); });
    EXPECT_NE(msg.find(key), std::string::npos) << msg;
    EXPECT_NE(msg.find("may change epochs alone"), std::string::npos) << msg;
  }
  hg::train::Config cosine = recorded;
  cosine.sched = "cosine";
  for (const auto& [from, to] : {std::pair(recorded, cosine), std::pair(cosine, recorded)}) {
    const std::string msg =
        hg::test::error_of([&] { hg::train::reconcile_resume(from, "args.yaml", to, 2, 0, 6, 3); });
    EXPECT_NE(msg.find("sched"), std::string::npos) << msg;
    EXPECT_NE(msg.find("plateau"), std::string::npos) << msg;
  }
  // under another sched patience_epochs does nothing: a change of it is taken, adding no history
  hg::train::Config patient = cosine;
  patient.patience_epochs = 3;
  const hg::train::ResumeSettings p =
      hg::train::reconcile_resume(cosine, "args.yaml", patient, 2, 0, 6, 3);
  EXPECT_EQ(p.args.patience_epochs, 3);
  EXPECT_TRUE(p.session.schedule_history.empty());
}
