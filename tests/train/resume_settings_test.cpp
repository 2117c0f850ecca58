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
