// train::DataWait on the CPU: every wait counts, in full.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "train/data_wait.h"

TEST(DataWait, CountsEveryWaitOnTheCpu) {
  hg::train::DataWait wait(hg::Device::cpu);
  wait.begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double s = wait.end();
  EXPECT_GE(s, 0.019);
  EXPECT_LT(s, 5.0);
  wait.begin();
  EXPECT_LT(wait.end(), 0.019);  // a new begin() starts a new wait
}
