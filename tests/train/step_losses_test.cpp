// StepLosses: the per-step losses read back in groups (train/step_losses.h), on the CPU; on a GPU
// (tests/gpu) the same class is used by every training run.
#include <gtest/gtest.h>

#include <cmath>

#include "core/tensor.h"
#include "train/step_losses.h"

using namespace hg;
using hg::train::StepLosses;

namespace {
Tensor scalar(float v) {
  Tensor t = Tensor::empty({}, DType::f32, Device::cpu);
  t.data<float>()[0] = v;
  return t;
}
}  // namespace

TEST(StepLosses, GivesBackEachStepsLossInOrderAndEmpties) {
  StepLosses l(3, Device::cpu);
  l.add(scalar(2.5f), 7, 16);
  Tensor reused = scalar(1.25f);
  l.add(reused, 8, 12);
  reused.data<float>()[0] = 99.f;  // a copy was taken: the loss tensor may be reused at once
  EXPECT_FALSE(l.full());
  l.add(scalar(NAN), 9, 16);  // kept as it is: the reader decides
  EXPECT_TRUE(l.full());
  EXPECT_THROW(l.add(scalar(1.f), 10, 16), Error);
  const StepLosses::Read r = l.take();
  ASSERT_EQ(r.losses.size(), 3u);
  EXPECT_EQ(r.losses[0], 2.5);
  EXPECT_EQ(r.losses[1], 1.25);
  EXPECT_TRUE(std::isnan(r.losses[2]));
  EXPECT_EQ(r.steps, (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(r.images, (std::vector<int64_t>{16, 12, 16}));
  EXPECT_EQ(l.pending(), 0);
  EXPECT_TRUE(l.take().losses.empty());
  l.add(scalar(0.5f), 11, 4);  // room again
  EXPECT_EQ(l.take().losses, std::vector<double>{0.5});
}

TEST(StepLosses, NamesALossThatIsNotOneF32Value) {
  StepLosses l(2, Device::cpu);
  EXPECT_THROW(l.add(Tensor::empty({2}, DType::f32, Device::cpu), 0, 1), Error);
  EXPECT_THROW(l.add(Tensor::empty({}, DType::f64, Device::cpu), 0, 1), Error);
  EXPECT_THROW(StepLosses(0, Device::cpu), Error);
}
