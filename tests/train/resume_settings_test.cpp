// reconcile_resume (train/resume_settings.h): which keys a resumed run may change.
#include "train/resume_settings.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "test_util.h"
#include "train/config.h"

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
