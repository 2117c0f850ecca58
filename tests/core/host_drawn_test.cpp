// host_drawn (core/host_drawn.h): eagerly a tensor of this call's draws; under a capture a buffer
// that is filled only by HostDrawnLog::refill, which draws again for every launch, from the same
// generators in the order of the recorded calls. On the CPU, so CI checks the order a CUDA graph's
// replays rely on (tests/gpu/step_graph_test.cpp runs the real thing).
#include <gtest/gtest.h>

#include <vector>

#include "core/host_drawn.h"
#include "core/random.h"

using namespace hg;

namespace {
DrawFn uniforms(Generator& gen) {
  return [&gen](std::vector<double>& v) {
    for (double& x : v) x = gen.uniform();
  };
}
std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }
}  // namespace

TEST(HostDrawn, ReplaysDrawWhatEagerStepsDrawInTheSameOrder) {
  Generator eager_gen(7), graph_gen(7);
  // Two eager "steps" of two calls each (3 then 2 values), as two drop-path blocks would draw.
  std::vector<std::vector<float>> eager;
  for (int step = 0; step < 2; ++step)
    for (int64_t n : {3, 2})
      eager.push_back(values(host_drawn(n, DType::f32, Device::cpu, uniforms(eager_gen))));

  HostDrawnLog log;
  Tensor first, second;
  {
    HostDrawnCapture capture(log);
    first = host_drawn(3, DType::f32, Device::cpu, uniforms(graph_gen));
    second = host_drawn(2, DType::f32, Device::cpu, uniforms(graph_gen));
  }
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(first.shape(), Shape{3});
  Generator untouched(7);
  EXPECT_EQ(Generator(graph_gen).uniform(), untouched.uniform()) << "a capture draws nothing";
  for (int step = 0; step < 2; ++step) {  // every launch refills the captured buffers
    log.refill();
    EXPECT_EQ(values(first), eager[static_cast<size_t>(2 * step)]) << "step " << step;
    EXPECT_EQ(values(second), eager[static_cast<size_t>(2 * step + 1)]) << "step " << step;
  }
  // Outside the capture the calls are eager again and not recorded.
  (void)host_drawn(4, DType::f32, Device::cpu, uniforms(graph_gen));
  EXPECT_EQ(log.size(), 2u);
}
