// The allocator on real training steps (issue 11, item 4): memory held from the system within 10%
// of the live peak, and no system allocation once the first steps have sized the memory.
//
// The steps of ConvNeXt and WTConvNeXt run on the CPU at batches 1 and 2; their allocation traces
// are extrapolated to batch 128, the GPU benchmark's, where activations dominate as they do there
// (at batch 2 the parameters and the optimizer state do), and replayed against the allocator's own
// code. That the replay is the allocator is checked too: replaying the batch-2 trace gives exactly
// the figures the allocator reported while the steps ran.
#include <gtest/gtest.h>

#include "core/alloc_trace.h"
#include "core/threads.h"
#include "train/step_trace.h"

using namespace hg;

namespace {

void expect_same(const std::vector<ReplayStep>& replay, const std::vector<ReplayStep>& real) {
  ASSERT_EQ(replay.size(), real.size());
  for (size_t i = 0; i < real.size(); ++i) {
    EXPECT_EQ(replay[i].live_peak, real[i].live_peak) << "step " << i + 1;
    EXPECT_EQ(replay[i].reserved_peak, real[i].reserved_peak) << "step " << i + 1;
    EXPECT_EQ(replay[i].reserved_end, real[i].reserved_end) << "step " << i + 1;
    EXPECT_EQ(replay[i].system_allocs, real[i].system_allocs) << "step " << i + 1;
  }
}

// Step 3 and the last update after it: no system allocation; step 3: reserved <= 1.10 x live.
void expect_steady(const std::vector<ReplayStep>& steps, const std::string& what) {
  ASSERT_EQ(steps.size(), 4u) << what;  // 3 steps + the last update
  for (size_t i = 2; i < steps.size(); ++i) {
    const ReplayStep& s = steps[i];
    EXPECT_EQ(s.system_allocs, 0) << what << ", step " << i + 1;
    if (i + 1 < steps.size()) {
      const double ratio = static_cast<double>(s.reserved_peak) / static_cast<double>(s.live_peak);
      EXPECT_LE(ratio, 1.10) << what << ", step " << i + 1 << ": reserved "
                             << (s.reserved_peak >> 20) << " MiB, live " << (s.live_peak >> 20)
                             << " MiB";
    }
  }
}

// One CPU thread: the trace does not depend on it, and idle OpenMP threads that spin on a busy
// machine made this test five times slower.
class StepMemory : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { set_cpu_threads(1); }
  void TearDown() override { set_cpu_threads(saved_); }
  const int saved_ = cpu_threads();
};

}  // namespace

TEST_P(StepMemory, ReservedWithinTenPercentOfTheLivePeakAndNoSystemAllocationAfterTwoSteps) {
  train::StepTraceOptions o;
  o.model = GetParam();
  o.img_size =
      112;  // the structure of 224 px (every WTConv level sees data) at a quarter of the cost
  o.steps = 3;
  o.batch = 1;
  const train::RecordedSteps b1 = train::record_training_steps(o);
  o.batch = 2;
  const train::RecordedSteps b2 = train::record_training_steps(o);

  expect_same(replay_trace(b2.trace), b2.allocator);
  for (size_t i = 2; i < b2.allocator.size(); ++i)
    EXPECT_EQ(b2.allocator[i].system_allocs, 0) << "batch 2, step " << i + 1;

  expect_steady(replay_trace(extrapolate_trace(b1.trace, 1, b2.trace, 2, 128)), "batch 128");
  expect_steady(replay_trace(extrapolate_trace(b1.trace, 1, b2.trace, 2, 64)), "batch 64");
}

INSTANTIATE_TEST_SUITE_P(Models, StepMemory, ::testing::Values("convnext_atto", "wtconvnext_atto"));
