// hg::cuda::wait_polling: returns only once the event's work is done (a 200 ms spin queued before
// it: not done when the wait starts, done when it returns), and at once for an event that is
// complete already.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

#include "core/tensor.h"
#include "gpu_util.h"
#include "kernels/cuda/context.h"
#include "queued_work.h"

using namespace hg;

TEST(WaitPolling, ReturnsWhenTheQueuedWorkIsDone) {
  HG_REQUIRE_GPU();
  const std::vector<uint8_t> threes(1000, 3);
  const Tensor bytes = Tensor::from_bytes({1000}, DType::u8, threes.data(), Device::cuda);
  const Tensor sum = Tensor::zeros({1}, DType::i64, Device::cuda);
  auto* s = reinterpret_cast<unsigned long long*>(sum.data_ptr());
  cudaEvent_t e;
  ASSERT_EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
  test::queue_spin_then_sum(static_cast<const uint8_t*>(bytes.data_ptr()), 1000, s, 200.0);
  ASSERT_EQ(cudaEventRecord(e, nullptr), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(e), cudaErrorNotReady);  // the spin is still running
  cuda::wait_polling(e);
  EXPECT_EQ(cudaEventQuery(e),
            cudaSuccess);  // what wait_polling promises (a copy back would wait anyway)
  cuda::wait_polling(e);   // complete already: returns at once
  ASSERT_EQ(cudaEventDestroy(e), cudaSuccess);
}
