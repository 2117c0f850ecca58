// train::DataWait on CUDA counts the GPU's idle time while the host waits for a batch:
// ~0 for a wait while the GPU still runs earlier work (a 300 ms spin queued before it), the wait's
// length once that work is done; and more pairs than its ring holds are all counted.
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

TEST(DataWait, CountsOnlyTheGpusIdleTimeInAWait) {
  HG_REQUIRE_GPU();
  const std::vector<uint8_t> fives(1000, 5);
  const Tensor bytes = Tensor::from_bytes({1000}, DType::u8, fives.data(), Device::cuda);
  const Tensor sum = Tensor::zeros({1}, DType::i64, Device::cuda);
  train::DataWait wait(Device::cuda);
  cuda::synchronize();
  test::queue_spin_then_sum(static_cast<const uint8_t*>(bytes.data_ptr()), 1000,
                            reinterpret_cast<unsigned long long*>(sum.data_ptr()), 300.0);
  wait.begin();  // after the spin
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  wait.end();
  const double busy = wait.seconds();  // waits for the spin
  EXPECT_LT(busy, 0.005) << "the GPU ran the spin for the whole wait";
  wait.begin();  // the GPU has nothing queued now
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  wait.end();
  const double idle = wait.seconds() - busy;
  EXPECT_GE(idle, 0.019) << "the GPU was idle the whole wait";
  EXPECT_LT(idle, 5.0);
  for (int k = 0; k < 20; ++k) {  // 20 pairs through a ring of 8, each with a 2 ms idle wait
    wait.begin();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    wait.end();
  }
  // the GPU's clock sees each wait a little later than the host's sleep starts: 0.5 ms allowed
  EXPECT_GE(wait.seconds() - busy - idle, 20 * 0.0015);
  EXPECT_EQ(sum.to(Device::cpu).to_vector<int64_t>()[0], 5000);
}
