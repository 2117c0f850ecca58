// Pinned host memory: batches really are page-locked on a GPU machine, the asynchronous copy to the
// GPU delivers the right bytes even when the host block is freed and reused at once, and the pool
// stops calling cudaHostAlloc once it holds enough blocks.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/pinned_memory.h"
#include "data/loader.h"
#include "data/synthetic.h"
#include "gpu_util.h"
#include "test_util.h"

using namespace hg;

TEST(PinnedMemory, AsyncCopySurvivesImmediateReuseOfTheHostBlock) {
  HG_REQUIRE_GPU();
  const int64_t n = int64_t(8) << 20;  // 32 MiB: the copy is still running when we return
  Tensor expect = test::random({n}, 5, DType::f32);
  Tensor dev = Tensor::full({n}, std::nan(""), DType::f32, Device::cuda);  // poisoned
  {
    Tensor host = Tensor::empty_pinned({n}, DType::f32);
    ASSERT_TRUE(memory::is_pinned(host.data_ptr()));
    host.copy_(expect);
    dev.copy_(host);  // queued; `host` dies right after
  }
  // Grab same-size blocks and overwrite them while the copy may still be in flight: the pool must
  // not hand out the block the copy reads from until the copy is done.
  std::vector<Tensor> others;
  for (int i = 0; i < 3; ++i) {
    others.push_back(Tensor::empty_pinned({n}, DType::f32));
    others.back().fill_(-7.0);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(dev.to_vector<float>(), expect.to_vector<float>());
}

TEST(PinnedMemory, SteadyStateMakesNoHostAlloc) {
  HG_REQUIRE_GPU();
  Tensor dev = Tensor::empty({4096}, DType::f32, Device::cuda);
  int64_t after_warmup = 0;
  for (int step = 0; step < 8; ++step) {
    Tensor host = Tensor::empty_pinned({4096}, DType::f32);
    host.fill_(static_cast<double>(step));
    dev.copy_(host);
    host = Tensor();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the copy is done: its block is free to reuse
    EXPECT_EQ(dev.to_vector<float>()[4095], static_cast<float>(step));
    if (step == 1) after_warmup = memory::pinned_stats().system_allocs;
  }
  EXPECT_EQ(memory::pinned_stats().system_allocs, after_warmup);
  EXPECT_GT(memory::pinned_stats().reserved, 0);
}

// Batches of GPU-bound crops differ in size from batch to batch (+-20% here): blocks are reused
// across sizes, so the pool stops allocating and stays a few blocks big.
TEST(PinnedMemory, VaryingSizesReuseBlocks) {
  HG_REQUIRE_GPU();
  Tensor dev = Tensor::empty({int64_t(1) << 18}, DType::u8, Device::cuda);
  const int64_t before = memory::pinned_stats().system_allocs;
  int64_t after_warmup = 0;
  for (int step = 0; step < 40; ++step) {
    const int64_t n = int64_t(200000 + 50000 * std::sin(step * 1.7));
    Tensor host = Tensor::empty_pinned({n}, DType::u8);
    host.fill_(static_cast<double>(step % 200));
    dev.slice(0, 0, n).copy_(host);
    host = Tensor();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(dev.slice(0, n - 1, n).to_vector<uint8_t>()[0], static_cast<uint8_t>(step % 200));
    if (step == 9) after_warmup = memory::pinned_stats().system_allocs;
  }
  EXPECT_EQ(memory::pinned_stats().system_allocs, after_warmup);
  EXPECT_LE(after_warmup - before, 3);
}

TEST(PinnedMemory, LoaderBatchesArePinnedAndCopyExactly) {
  HG_REQUIRE_GPU();
  auto ds = std::make_shared<data::SyntheticDataset>(40, 7, 20, 20, 3, 9);
  data::TransformOptions to;
  to.img_size = 16;
  to.train = true;
  data::LoaderOptions lo;
  lo.batch_size = 8;
  lo.workers = 2;
  lo.seed = 3;
  data::DataLoader plain(ds, data::Transform(to), lo);
  lo.pin_memory = true;
  data::DataLoader pinned(ds, data::Transform(to), lo);
  plain.start_epoch(1);
  pinned.start_epoch(1);
  data::Batch a, b;
  int batches = 0;
  while (plain.next(a)) {
    ASSERT_TRUE(pinned.next(b));
    EXPECT_TRUE(memory::is_pinned(b.images.data_ptr()));
    EXPECT_TRUE(memory::is_pinned(b.labels.data_ptr()));
    EXPECT_FALSE(memory::is_pinned(a.images.data_ptr()));
    Tensor x = b.images.to(Device::cuda), y = b.labels.to(Device::cuda);
    b = data::Batch();  // the host blocks go back to the pool while the copies may run
    EXPECT_EQ(x.to_vector<float>(), a.images.to_vector<float>());
    EXPECT_EQ(y.to_vector<int64_t>(), a.labels.to_vector<int64_t>());
    ++batches;
  }
  EXPECT_FALSE(pinned.next(b));
  EXPECT_EQ(batches, 5);
}
