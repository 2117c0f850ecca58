// Memory accounting: exact bytes per category, the caching allocator's reuse, activations'
// return to zero after a step, and no system allocation in a steady-state training step.
// Statistics are per process, so every check is a difference from a baseline taken in the test.
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "core/memory.h"
#include "core/pinned_memory.h"
#include "core/ops.h"
#include "test_util.h"

using namespace hg;

namespace {

int64_t cur(const MemoryStats& s, Category c) { return s.current[static_cast<size_t>(c)]; }
int64_t peak(const MemoryStats& s, Category c) { return s.peak[static_cast<size_t>(c)]; }
MemoryStats cpu_stats() { return memory::stats(Device::cpu); }

// A leaf parameter in Category::parameters, requiring grad.
Tensor parameter(const Shape& shape, uint64_t seed, DType dtype = DType::f64) {
  memory::CategoryScope scope(Category::parameters);
  Tensor p = test::random(shape, seed, dtype);
  p.requires_grad_();
  return p;
}

// An input batch made outside any step (no-grad: not recorded, counted as activations).
Tensor batch(const Shape& shape, uint64_t seed) {
  autograd::NoGradGuard no_grad;
  return test::random(shape, seed, DType::f64);
}

}  // namespace

TEST(Memory, ExactBytesPerCategoryRoundedTo256) {
  autograd::NoGradGuard no_grad;  // nothing here is recorded on the tape
  const MemoryStats s0 = cpu_stats();
  memory::reset_peak(Device::cpu);
  Tensor p, g, o, w, a;
  {
    memory::CategoryScope scope(Category::parameters);
    p = Tensor::empty({10}, DType::f32);  // 40 bytes -> 256
    {
      memory::CategoryScope inner(Category::gradients);
      EXPECT_EQ(memory::current_category(), Category::gradients);
      g = Tensor::empty({64}, DType::f32);  // exactly 256
    }
    EXPECT_EQ(memory::current_category(), Category::parameters) << "scopes nest and restore";
  }
  {
    memory::CategoryScope scope(Category::optimizer_state);
    o = Tensor::empty({65}, DType::f32);  // 260 -> 512
  }
  {
    memory::CategoryScope scope(Category::workspace);
    w = Tensor::empty({0}, DType::f64);  // empty still takes one 256-byte unit
  }
  EXPECT_EQ(memory::current_category(), Category::activations) << "the default category";
  a = Tensor::empty({100}, DType::f64);  // 800 -> 1024

  MemoryStats s1 = cpu_stats();
  const std::pair<Category, int64_t> expected[] = {{Category::parameters, 256}, {Category::gradients, 256},
                                                   {Category::optimizer_state, 512},
                                                   {Category::activations, 1024}, {Category::workspace, 256}};
  for (auto [c, bytes] : expected) {
    EXPECT_EQ(cur(s1, c) - cur(s0, c), bytes) << category_name(c);
    EXPECT_EQ(peak(s1, c) - cur(s0, c), bytes) << category_name(c);
  }
  EXPECT_EQ(s1.total_current - s0.total_current, 2304);
  Tensor view = p.reshape({2, 5});  // views share storage: no bytes
  EXPECT_EQ(cpu_stats().total_current, s1.total_current);

  // A transient 4000-byte parameter raises the peak by 4096 and leaves current as it was.
  {
    memory::CategoryScope scope(Category::parameters);
    Tensor big = Tensor::empty({1000}, DType::f32);
    EXPECT_EQ(cur(cpu_stats(), Category::parameters) - cur(s0, Category::parameters), 256 + 4096);
  }
  MemoryStats s2 = cpu_stats();
  EXPECT_EQ(cur(s2, Category::parameters) - cur(s0, Category::parameters), 256);
  EXPECT_EQ(peak(s2, Category::parameters) - cur(s0, Category::parameters), 256 + 4096);
  EXPECT_EQ(s2.total_peak - s0.total_current, 2304 + 4096);

  // Dropping everything returns every category to its baseline; reset_peak forgets the high mark.
  p = g = o = w = a = view = Tensor();
  MemoryStats s3 = cpu_stats();
  for (int i = 0; i < kNumCategories; ++i) EXPECT_EQ(s3.current[i], s0.current[i]) << i;
  EXPECT_EQ(s3.total_current, s0.total_current);
  memory::reset_peak(Device::cpu);
  EXPECT_EQ(cpu_stats().peak, s0.current);
}

TEST(Memory, CacheReusesFreedBlocksAndEmptyCacheReturnsThem) {
  autograd::NoGradGuard no_grad;
  memory::empty_cache(Device::cpu);  // no free segment left over from other tests
  const int64_t n = (int64_t(37) << 20) + 12'345;  // large pool: one segment, rounded up to 38 MiB
  MemoryStats s0 = cpu_stats();
  { Tensor t = Tensor::empty({n}, DType::u8); }
  MemoryStats s1 = cpu_stats();
  EXPECT_EQ(s1.system_allocs - s0.system_allocs, 1) << "a new size comes from the system";
  EXPECT_EQ(s1.reserved - s0.reserved, int64_t(38) << 20) << "and stays reserved (cached) when freed";
  EXPECT_EQ(s1.total_current, s0.total_current);
  for (int i = 0; i < 3; ++i) {
    Tensor t = Tensor::empty({n}, DType::u8);
    EXPECT_EQ(cpu_stats().system_allocs, s1.system_allocs) << "the same size reuses the cached block";
  }
  memory::empty_cache(Device::cpu);
  EXPECT_EQ(cpu_stats().reserved, s0.reserved) << "empty_cache returns cached segments";
}

// A freed block serves smaller requests (split) and becomes whole again when they are freed
// (merge); a request takes the smallest free block that fits.
TEST(Memory, APoolServesOnlyItsScopeAndGivesItsMemoryBackWhenGone) {
  autograd::NoGradGuard no_grad;
  memory::empty_cache(Device::cpu);
  const int64_t n = int64_t(24) << 20;  // large pool: a segment of its own
  const MemoryStats s0 = cpu_stats();
  void* in_pool = nullptr;
  {
    std::shared_ptr<memory::PrivatePool> pool = memory::make_private_pool(Device::cpu);
    {
      memory::PrivatePoolScope scope(pool);
      Tensor t = Tensor::empty({n}, DType::u8);
      in_pool = t.data_ptr();
    }
    EXPECT_EQ(cpu_stats().reserved - s0.reserved, n)
        << "the pool's segment is counted, cached after the free";
    {
      Tensor outside = Tensor::empty({n}, DType::u8);
      EXPECT_NE(outside.data_ptr(), in_pool)
          << "the shared allocator never hands out the pool's free block";
    }
    Tensor kept;
    {
      memory::PrivatePoolScope scope(pool);
      kept = Tensor::empty({n}, DType::u8);
      EXPECT_EQ(kept.data_ptr(), in_pool) << "the pool reuses its own block";
    }
    pool.reset();  // the block still in use keeps the pool's memory
    EXPECT_EQ(cpu_stats().reserved - s0.reserved, 2 * n);
    kept = Tensor();
    EXPECT_EQ(cpu_stats().reserved - s0.reserved, n)
        << "the pool's segment went back with its last block";
  }
  memory::empty_cache(Device::cpu);
  EXPECT_EQ(cpu_stats().reserved, s0.reserved);
}

TEST(Memory, FreedBlocksAreSplitMergedAndBestFit) {
  autograd::NoGradGuard no_grad;
  memory::empty_cache(Device::cpu);
  const MemoryStats s0 = cpu_stats();
  const int64_t big = int64_t(40) << 20;
  char* base = nullptr;
  {
    Tensor t = Tensor::empty({big}, DType::u8);
    base = static_cast<char*>(t.data_ptr());
  }
  const MemoryStats s1 = cpu_stats();
  ASSERT_EQ(s1.system_allocs - s0.system_allocs, 1);
  {
    Tensor a = Tensor::empty({big / 2}, DType::u8), b = Tensor::empty({big / 2}, DType::u8);
    EXPECT_EQ(static_cast<char*>(a.data_ptr()), base) << "split from the cached 40 MiB block";
    EXPECT_EQ(static_cast<char*>(b.data_ptr()), base + big / 2) << "the remainder serves the second";
    EXPECT_EQ(cpu_stats().system_allocs, s1.system_allocs);
    EXPECT_EQ(cpu_stats().reserved, s1.reserved);
  }
  {
    Tensor t = Tensor::empty({big}, DType::u8);
    EXPECT_EQ(static_cast<char*>(t.data_ptr()), base) << "the freed halves merged back";
    EXPECT_EQ(cpu_stats().system_allocs, s1.system_allocs);
  }
  char* small_block = nullptr;
  {
    Tensor t = Tensor::empty({int64_t(12) << 20}, DType::u8);  // a second segment
    small_block = static_cast<char*>(t.data_ptr());
  }
  {
    Tensor t = Tensor::empty({int64_t(11) << 20}, DType::u8);
    EXPECT_EQ(static_cast<char*>(t.data_ptr()), small_block) << "best fit: 12 MiB, not 40 MiB";
  }
  memory::empty_cache(Device::cpu);
  EXPECT_EQ(cpu_stats().reserved, s0.reserved);
}

TEST(Memory, ActivationsReturnToBaselineAfterBackward) {
  Tensor W = parameter({8, 6}, 1);
  Tensor x = batch({5, 8}, 2);
  const MemoryStats s0 = cpu_stats();
  const int64_t act0 = cur(s0, Category::activations), grad0 = cur(s0, Category::gradients);
  {
    Tensor y = ops::matmul(x, W);  // recorded: the tape keeps x and W for the backward
    Tensor loss = ops::sum_all(ops::mul(y, y));
    EXPECT_GT(autograd::tape_size(), 0u);
    EXPECT_GE(cur(cpu_stats(), Category::activations) - act0, 2 * 256) << "y, y*y and loss are live";
    autograd::backward(loss);
    EXPECT_EQ(autograd::tape_size(), 0u);
    // The step's tensors still held here keep their bytes; the tape's saved copies are gone.
    EXPECT_GT(cur(cpu_stats(), Category::activations), act0);
  }
  MemoryStats s1 = cpu_stats();
  EXPECT_EQ(cur(s1, Category::activations), act0) << "all activation bytes return once dropped";
  // The parameter's gradient persists, in Category::gradients: 8*6 doubles = 384 -> 512 bytes.
  ASSERT_TRUE(W.grad().defined());
  EXPECT_EQ(cur(s1, Category::gradients) - grad0, 512);
  // dL/dW = 2 x^T (x W) for L = sum((xW)^2).
  {
    autograd::NoGradGuard no_grad;
    Tensor expect = ops::scale(ops::matmul(x, ops::matmul(x, W), true, false), 2.0);
    EXPECT_LT(test::rel_error(W.grad(), expect), 1e-12);
  }

  // A forward that is never backpropagated: clear_tape releases what the tape saved.
  {
    Tensor loss = ops::sum_all(ops::matmul(x, W));
    EXPECT_GT(cur(cpu_stats(), Category::activations), act0);
    autograd::clear_tape();
  }
  EXPECT_EQ(cur(cpu_stats(), Category::activations), act0);
  EXPECT_EQ(autograd::tape_size(), 0u);

  W.clear_grad();
  EXPECT_EQ(cur(cpu_stats(), Category::gradients), grad0);
}

TEST(Memory, SteadyStateTrainingStepMakesNoSystemAllocation) {
  // A small two-layer step: h = x W1, y = (h * h) W2, loss = sum(y * y); backward; SGD in place.
  Tensor W1 = parameter({8, 16}, 3), W2 = parameter({16, 4}, 4);
  Tensor x = batch({6, 8}, 5);
  const MemoryStats s0 = cpu_stats();
  const int64_t act0 = cur(s0, Category::activations), grad0 = cur(s0, Category::gradients);
  int64_t allocs_after_step2 = -1;
  const void* grad_storage = nullptr;
  double previous_loss = 0;
  for (int step = 1; step <= 6; ++step) {
    {
      Tensor h = ops::matmul(x, W1);
      Tensor y = ops::matmul(ops::mul(h, h), W2);
      Tensor loss = ops::sum_all(ops::mul(y, y));
      double value = loss.item();
      if (step > 1) {
        EXPECT_LT(value, previous_loss) << "the SGD step should lower the loss";
      }
      previous_loss = value;
      autograd::backward(loss);
    }
    {
      autograd::NoGradGuard no_grad;
      ops::add_(W1, ops::scale(W1.grad(), -1e-3));
      ops::add_(W2, ops::scale(W2.grad(), -1e-3));
      W1.zero_grad();
      W2.zero_grad();
    }
    MemoryStats s = cpu_stats();
    EXPECT_EQ(cur(s, Category::activations), act0) << "step " << step;
    // Gradients persist, allocated once: (8*16 + 16*4) doubles = 1024 + 512 bytes.
    EXPECT_EQ(cur(s, Category::gradients) - grad0, 1024 + 512) << "step " << step;
    if (step == 1) grad_storage = W1.grad().data_ptr();
    EXPECT_EQ(W1.grad().data_ptr(), grad_storage) << "the gradient buffer is reused in place";
    if (step == 2) allocs_after_step2 = s.system_allocs;
    if (step >= 3) {
      EXPECT_EQ(s.system_allocs, allocs_after_step2) << "step " << step << " called malloc";
    }
    EXPECT_GT(peak(s, Category::activations), act0) << "the step's activations are counted";
  }
}

TEST(Memory, HoldingALossAcrossStepsStillMakesNoSystemAllocation) {
  // A training loop that keeps the last loss (e.g. for logging) holds one tensor of step n while
  // step n+1 runs: the allocator must not take new memory for every step because of it.
  Tensor W = parameter({8, 16}, 6);
  Tensor x = batch({6, 8}, 7);
  const int64_t act0 = cur(cpu_stats(), Category::activations);
  Tensor last_loss;
  int64_t allocs_after_step2 = -1;
  for (int step = 1; step <= 6; ++step) {
    {
      Tensor h = ops::matmul(x, W);
      Tensor loss = ops::sum_all(ops::mul(h, h));
      autograd::backward(loss);
      last_loss = loss;
    }
    W.zero_grad();
    MemoryStats s = cpu_stats();
    if (step == 2) allocs_after_step2 = s.system_allocs;
    if (step >= 3) {
      EXPECT_EQ(s.system_allocs, allocs_after_step2) << "step " << step << " called malloc";
    }
  }
  last_loss = Tensor();
  EXPECT_EQ(cur(cpu_stats(), Category::activations), act0);
}

// Without a usable GPU, "pinned" tensors are ordinary CPU tensors: same shape, dtype, device and
// data, and is_pinned is false (on a GPU machine tests/gpu/pinned_memory_test.cpp covers the rest).
TEST(Memory, EmptyPinnedIsAUsableCpuTensor) {
  Tensor t = Tensor::empty_pinned({3, 5}, DType::f64);
  EXPECT_EQ(t.device(), Device::cpu);
  EXPECT_EQ(t.shape(), (Shape{3, 5}));
  EXPECT_EQ(t.dtype(), DType::f64);
  t.fill_(2.5);
  EXPECT_EQ(t.to_vector<double>(), std::vector<double>(15, 2.5));
  EXPECT_EQ(t.to(Device::cpu).data_ptr(), t.data_ptr());
  EXPECT_THROW(Tensor::empty_pinned({2, -1}), Error);
#ifndef HAARGRAD_WITH_CUDA
  EXPECT_FALSE(memory::is_pinned(t.data_ptr()));
#endif
  int x = 0;
  EXPECT_FALSE(memory::is_pinned(&x));  // a pointer the pool never handed out
}
