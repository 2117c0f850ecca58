// train::DataWait on CUDA: a wait while the GPU still runs earlier work (a 300 ms spin queued
// before it) counts 0; a wait after that work is done counts in full.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "core/tensor.h"
#include "gpu_util.h"
#include "kernels/cuda/context.h"
#include "queued_work.h"
#include "train/data_wait.h"

using namespace hg;

TEST(DataWait, CountsOnlyWaitsWhileTheGpuHadNoWork) {
  HG_REQUIRE_GPU();
  const std::vector<uint8_t> fives(1000, 5);
  const Tensor bytes = Tensor::from_bytes({1000}, DType::u8, fives.data(), Device::cuda);
  const Tensor sum = Tensor::zeros({1}, DType::i64, Device::cuda);
  train::DataWait wait(Device::cuda);
  cuda::synchronize();
  test::queue_spin_then_sum(static_cast<const uint8_t*>(bytes.data_ptr()), 1000,
                            reinterpret_cast<unsigned long long*>(sum.data_ptr()), 300.0);
  wait.begin();  // marks the spin
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(wait.end(), 0.0) << "the GPU was busy with the spin the whole wait";
  cuda::synchronize();
  wait.begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(wait.end(), 0.019) << "the GPU had nothing queued: the wait counts";
  EXPECT_EQ(sum.to(Device::cpu).to_vector<int64_t>()[0], 5000);
}
