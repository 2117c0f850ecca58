// train::DataWait on the CPU: every host wait between begin() and end() counts, in full.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "train/data_wait.h"

TEST(DataWait, CountsEveryWaitOnTheCpu) {
  hg::train::DataWait wait(hg::Device::cpu);
  EXPECT_EQ(wait.seconds(), 0.0);
  wait.begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  wait.end();
  const double one = wait.seconds();
  EXPECT_GE(one, 0.019);
  EXPECT_LT(one, 5.0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // outside a pair: not counted
  wait.begin();
  wait.end();
  EXPECT_LT(wait.seconds() - one, 0.019);
}
