// Gradient buckets (train/grad_buckets.h) and the autograd hook they rely on
// (GradSlot::on_grad_final in core/autograd.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/ops.h"
#include "train/grad_buckets.h"

using namespace hg;

namespace {

Tensor param(const Shape& s, double v) {
  Tensor t = Tensor::full(s, v, DType::f64);
  t.requires_grad_();
  return t;
}

}  // namespace

TEST(GradBuckets, CapClosesABucketBeforeItOverflows) {
  // f32 parameters of 10, 20, 30, 100, 5 elements: 40, 80, 120, 400, 20 bytes; cap 128 bytes
  std::vector<Tensor> ps;
  for (int64_t n : {10, 20, 30, 100, 5}) ps.push_back(Tensor::zeros({n}, DType::f32));
  const auto b = train::plan_buckets(ps, 128, 4);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].entries.size(), 2u);  // 40 + 80 = 120 <= 128; + 120 would be 240
  EXPECT_EQ(b[0].numel, 30);
  EXPECT_EQ(b[0].padded, 32);  // a multiple of the 4 ranks
  EXPECT_EQ(b[0].chunk(), 8);
  EXPECT_EQ(b[1].entries.size(), 1u);
  EXPECT_EQ(b[2].numel, 100);  // larger than the cap: a bucket of its own
  EXPECT_EQ(b[3].entries[0].param, 4u);
  EXPECT_EQ(b[0].entries[1].offset, 10);
  // chunk parts: parameter 1 spans elements [10, 30): rank 1 owns [8, 16) -> [10, 16)
  const train::ChunkRange c = train::chunk_part(b[0], b[0].entries[1], 1);
  EXPECT_EQ(c.lo, 10);
  EXPECT_EQ(c.hi, 16);
  EXPECT_TRUE(train::chunk_part(b[0], b[0].entries[0], 3).empty());  // [24, 32) misses [0, 10)
  EXPECT_THROW(train::plan_buckets(ps, 0, 1), Error);
}

TEST(GradBuckets, GradientsAccumulateIntoTheBucketViews) {
  Tensor w = param({2, 3}, 0.5), b = param({3}, 0.25);
  std::vector<Tensor> ps{b, w};
  auto buckets = train::plan_buckets(ps, 1 << 20, 2);
  ASSERT_EQ(buckets.size(), 1u);
  train::attach_bucket_grads(buckets, ps);
  Tensor x = Tensor::full({4, 2}, 1.0, DType::f64);
  for (int rep = 0; rep < 2; ++rep) {  // two backward calls accumulate
    Tensor y = ops::add(ops::matmul(x, w), ops::broadcast_to(b.reshape({1, 3}), {4, 3}));
    autograd::backward(ops::sum_all(y));
  }
  const auto flat = buckets[0].flat.to_vector<double>();
  ASSERT_EQ(flat.size(), 10u);  // 9 elements padded to 10
  for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(flat[static_cast<size_t>(i)], 8.0) << "db = 4 rows x 2 calls";
  for (int i = 3; i < 9; ++i) EXPECT_DOUBLE_EQ(flat[static_cast<size_t>(i)], 8.0) << "dw = 4 x 1 x 2 calls";
  EXPECT_EQ(flat[9], 0.0);
  // zero_grad keeps the views; it is lazy: the next backward overwrites them (4, not 8 + 4) ...
  w.zero_grad();
  b.zero_grad();
  autograd::backward(ops::sum_all(ops::matmul(x, w)));
  const auto after = buckets[0].flat.to_vector<double>();
  for (int i = 3; i < 9; ++i)
    EXPECT_DOUBLE_EQ(after[static_cast<size_t>(i)], 4.0) << "dw of one call";
  // ... and a view that no backward reached reads as zeros (grad() writes them)
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{0, 0, 0}));
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(buckets[0].flat.to_vector<double>()[static_cast<size_t>(i)], 0.0);
  EXPECT_EQ(w.grad().data_ptr(), static_cast<char*>(buckets[0].flat.data_ptr()) + 3 * sizeof(double));
}

// The hook runs once per backward, right after the last entry that uses the leaf, also for a leaf
// whose entries did not reach the loss, and never for a leaf that is not on the tape.
TEST(GradBuckets, GradFinalHookRunsWhenTheLastUseIsDone) {
  Tensor a = param({2}, 1.0), b = param({2}, 2.0), unused = param({2}, 3.0), dead = param({2}, 4.0);
  std::vector<std::string> log;
  a.grad_slot()->on_grad_final = [&] { log.push_back(a.grad().defined() ? "a" : "a-undefined"); };
  b.grad_slot()->on_grad_final = [&] { log.push_back("b"); };
  unused.grad_slot()->on_grad_final = [&] { log.push_back("unused"); };
  dead.grad_slot()->on_grad_final = [&] { log.push_back("dead"); };
  Tensor u = ops::mul(a, b);        // entry 1: a, b
  Tensor v = ops::add(u, a);        // entry 2: a (last use of a in forward order)
  Tensor d = ops::scale(dead, 2.0); // entry 3: does not lead to the loss
  (void)d;
  Tensor loss = ops::sum_all(ops::scale(v, 3.0));
  autograd::backward(loss);
  // reverse order: sum, scale, dead's scale (unreached: dead final), add (a still used by mul),
  // mul (a and b final)
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0], "dead");
  EXPECT_TRUE((log[1] == "a" && log[2] == "b") || (log[1] == "b" && log[2] == "a"));
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{9.0, 9.0}));  // 3 * (b + 1)
}
