// Two streams inside one op (kernels/cuda/overlap.h): the thread's stream waits for the side work
// at the join, and a block freed while both streams run is not handed to the other stream before
// the join. The side work here is a spinning kernel followed by a sum of bytes
// (gpu/queued_work.h), so a missing join or an early reuse shows in the sum.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/cuda_stream.h"
#include "core/tensor.h"
#include "gpu/queued_work.h"
#include "gpu_util.h"
#include "kernels/cuda/overlap.h"

using namespace hg;

namespace {

unsigned long long* as_sum(Tensor& t) {
  return reinterpret_cast<unsigned long long*>(t.data<int64_t>());
}

constexpr int64_t kFloats = int64_t(1) << 18;
constexpr int64_t kBytesOfOnes = kFloats * (0x80 + 0x3F);  // 1.0f is 00 00 80 3F

}  // namespace

TEST(Overlap, TheThreadsStreamWaitsForTheSideWorkAtTheJoin) {
  HG_REQUIRE_GPU();
  Tensor ones = Tensor::full({kFloats}, 1.0, DType::f32, Device::cuda);
  Tensor sum = Tensor::zeros({1}, DType::i64, Device::cuda);
  {
    cuda::Overlap ov;
    ov.side([&] {
      EXPECT_NE(cuda::stream(), cudaStreamPerThread) << "side work goes to the side stream";
      test::queue_spin_then_sum(reinterpret_cast<const uint8_t*>(ones.data<float>()), 4 * kFloats,
                                as_sum(sum), 50.0, cuda::stream());
    });
    EXPECT_EQ(cuda::stream(), cudaStreamPerThread) << "back on the thread's stream";
  }
  // read back on the thread's stream: without the join it would not wait for the 50 ms spin
  EXPECT_EQ(sum.to(Device::cpu).data<int64_t>()[0], kBytesOfOnes);
}

TEST(Overlap, ABlockFreedBySideWorkIsNotReusedBeforeTheJoin) {
  HG_REQUIRE_GPU();
  Tensor sum = Tensor::zeros({1}, DType::i64, Device::cuda);
  {
    cuda::Overlap ov;
    ov.side([&] {
      Tensor tmp = Tensor::full({kFloats}, 1.0, DType::f32, Device::cuda);
      test::queue_spin_then_sum(reinterpret_cast<const uint8_t*>(tmp.data<float>()), 4 * kFloats,
                                as_sum(sum), 50.0, cuda::stream());
    });  // tmp is freed here, its sum still 50 ms away on the side stream
    // Same size on the thread's stream, filled at once: in tmp's block, the side sum would see 7s.
    Tensor other = Tensor::full({kFloats}, 7.0, DType::f32, Device::cuda);
    (void)other;
  }
  EXPECT_EQ(sum.to(Device::cpu).data<int64_t>()[0], kBytesOfOnes);
}
