// default_cuda_queues (core/cuda_queues.h): sets CUDA_DEVICE_MAX_CONNECTIONS to 32 where the
// environment has no value, and keeps a value the user set.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "core/cuda_queues.h"

namespace {

// Restores the variable as the test found it.
struct SavedVariable {
  const char* name = "CUDA_DEVICE_MAX_CONNECTIONS";
  std::optional<std::string> was;
  SavedVariable() {
    if (const char* v = std::getenv(name)) was = v;
  }
  ~SavedVariable() {
    if (was)
      setenv(name, was->c_str(), 1);
    else
      unsetenv(name);
  }
};

}  // namespace

TEST(CudaQueues, SetsThirtyTwoWhereUnset) {
  SavedVariable saved;
  unsetenv(saved.name);
  EXPECT_EQ(hg::default_cuda_queues(), "32");
  ASSERT_NE(std::getenv(saved.name), nullptr);
  EXPECT_EQ(std::string(std::getenv(saved.name)), "32");
}

TEST(CudaQueues, KeepsTheUsersValue) {
  SavedVariable saved;
  setenv(saved.name, "4", 1);
  EXPECT_EQ(hg::default_cuda_queues(), "4");
  EXPECT_EQ(std::string(std::getenv(saved.name)), "4");
}
