// The allocator on the GPU: no cudaMalloc in a steady-state training step, and our byte accounting
// compared with what the driver reports (cudaMemGetInfo).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "core/cuda_stream.h"
#include "core/host_sync.h"
#include "core/memory.h"
#include "core/ops.h"
#include "gpu_util.h"
#include "layers/loss.h"
#include "models/convnext.h"
#include "small_step.h"
#include "test_util.h"
#include "train/optimizer.h"

using namespace hg;

namespace {
int64_t driver_used() {
  size_t free_b = 0, total_b = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
  return static_cast<int64_t>(total_b - free_b);
}

}  // namespace

TEST(GpuMemory, ReservedBytesMatchCudaMemGetInfo) {
  HG_REQUIRE_GPU();
  memory::empty_cache(Device::cuda);
  cudaDeviceSynchronize();
  const int64_t used0 = driver_used(), reserved0 = memory::stats(Device::cuda).reserved;
  {
    memory::CategoryScope scope(Category::workspace);
    std::vector<Tensor> keep;
    for (int i = 0; i < 4; ++i) keep.push_back(Tensor::empty({64 << 18}, DType::f32, Device::cuda));  // 64 MiB each
    const int64_t used = driver_used() - used0, reserved = memory::stats(Device::cuda).reserved - reserved0;
    EXPECT_EQ(reserved, int64_t(4) << 26);
    // The driver rounds allocations to its page size (2 MiB): within 2 MiB per allocation.
    EXPECT_GE(used, reserved);
    EXPECT_LE(used, reserved + 4 * (int64_t(2) << 20));
    std::printf("4 x 64 MiB: our reserved %lld bytes, driver used %lld bytes\n", (long long)reserved, (long long)used);
  }
  memory::empty_cache(Device::cuda);
  EXPECT_LE(driver_used() - used0, int64_t(8) << 20);  // given back
}

TEST(GpuMemory, SteadyStateTrainingStepMakesNoCudaMalloc) {
  HG_REQUIRE_GPU();
  test::SmallStep s("wtconvnext_atto");
  int64_t allocs_after_warmup = 0, used_after_warmup = 0;
  for (int step = 0; step < 6; ++step) {
    s.run();
    cudaDeviceSynchronize();
    if (step == 2) {
      allocs_after_warmup = memory::stats(Device::cuda).system_allocs;
      used_after_warmup = driver_used();
    }
  }
  const MemoryStats st = memory::stats(Device::cuda);
  EXPECT_EQ(st.system_allocs, allocs_after_warmup) << "cudaMalloc during steady-state steps";
  // The driver's view agrees: nothing new was taken (4 MiB of slack for lazily loaded kernel modules).
  EXPECT_LE(std::llabs(driver_used() - used_after_warmup), int64_t(4) << 20);
  EXPECT_GT(st.peak[static_cast<int>(Category::activations)], 0);
  EXPECT_GT(st.peak[static_cast<int>(Category::optimizer_state)], 0);
}

// The host-wait count (core/host_sync.h): a copy to the host and a copy from pageable memory wait
// for the stream and are counted; device-to-device and page-locked uploads are queued and are not;
// and a whole training step (forward, loss, backward, AdamW) queues without one.
TEST(GpuMemory, HostSyncsCountTheCopiesThatWaitAndNoneInATrainingStep) {
  HG_REQUIRE_GPU();
  const Tensor host = test::random({64}, 3, DType::f32);
  int64_t before = host_syncs();
  Tensor d = host.to(Device::cuda);  // pageable: counted
  EXPECT_EQ(host_syncs() - before, 1);
  before = host_syncs();
  Tensor d2 = Tensor::empty({64}, DType::f32, Device::cuda);
  d2.copy_(d);  // device to device: queued
  Tensor pinned = Tensor::empty_pinned({64}, DType::f32);
  pinned.copy_(host);
  Tensor d3 = pinned.to(Device::cuda);  // page-locked: queued
  EXPECT_EQ(host_syncs() - before, 0);
  EXPECT_EQ(d2.to(Device::cpu).to_vector<float>(),
            host.to_vector<float>());  // to the host: counted
  EXPECT_EQ(d3.to(Device::cpu).to_vector<float>(), host.to_vector<float>());
  EXPECT_EQ(host_syncs() - before, 2);

  test::SmallStep s("convnext_atto");
  for (int step = 0; step < 3; ++step) {
    before = host_syncs();
    s.run();
    EXPECT_EQ(host_syncs() - before, 0) << "step " << step;
  }
  cudaDeviceSynchronize();
}

// A capture whose requests do not fit its private pool takes a segment from the system
// (core/memory.cpp, system_alloc: cudaMalloc passes the capture's thread-local mode, relaxed for
// that call) instead of failing the capture; the graph then writes into that segment at every
// launch, and the thread's capture mode is the caller's again afterwards. Here the pool is new, so
// the product's block needs a segment.
TEST(GpuMemory, ACaptureMayTakeASegmentFromTheSystem) {
  HG_REQUIRE_GPU();
  const Tensor a = test::random({3000}, 41, DType::f32).to(Device::cuda);
  const Tensor b = test::random({3000}, 42, DType::f32).to(Device::cuda);
  const Tensor expected = ops::mul(a, b).to(Device::cpu);
  cudaStream_t s = cuda::stream();
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const int64_t allocs = memory::stats(Device::cuda).system_allocs;
  auto pool = memory::make_private_pool(Device::cuda);
  Tensor product;
  cudaGraph_t graph = nullptr;
  {
    memory::PrivatePoolScope scope(pool);
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    try {
      product = ops::mul(a, b);
    } catch (const std::exception& e) {
      cudaStreamEndCapture(s, &graph);
      FAIL() << "an allocation during the capture failed: " << e.what();
    }
    ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  }
  EXPECT_GT(memory::stats(Device::cuda).system_allocs, allocs) << "the new pool took no segment";
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(test::rel_error(product.to(Device::cpu), expected), 0.0);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;  // read the thread's mode, put it back
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  EXPECT_EQ(mode, cudaStreamCaptureModeGlobal) << "system_alloc left the thread's mode changed";
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
}
