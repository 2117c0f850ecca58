// The allocator's debug fill (core/debug_fill.h): new allocations read as NaN in every float dtype,
// in and out of grad mode, and a write past the end is counted when the memory is freed.
#include "core/debug_fill.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/autograd.h"
#include "core/tensor.h"

using namespace hg;

namespace {
class FillScope {
 public:
  FillScope() { memory::set_debug_fill(Device::cpu, true); }
  ~FillScope() { memory::set_debug_fill(Device::cpu, false); }
};
}  // namespace

TEST(DebugFill, NewAllocationsAreNaNInAndOutOfGradMode) {
  FillScope fill;
  EXPECT_TRUE(memory::debug_fill(Device::cpu));
  for (bool grad_mode : {true, false}) {
    std::unique_ptr<autograd::NoGradGuard> ng;
    if (!grad_mode) ng = std::make_unique<autograd::NoGradGuard>();
    for (DType dt : {DType::f32, DType::f64, DType::bf16}) {
      Tensor t = Tensor::empty({37}, dt);
      for (float v : t.to_vector<float>()) EXPECT_TRUE(std::isnan(v)) << dtype_name(dt);
    }
  }
  autograd::clear_tape();
}

TEST(DebugFill, WritePastTheEndIsCountedWhenFreed) {
  const int64_t before = memory::guard_violations();
  {
    FillScope fill;
    autograd::NoGradGuard ng;
    Tensor ok = Tensor::empty({5});
    ok.data<float>()[4] = 1.0f;  // the last element: fine
    Tensor bad = Tensor::empty({5});
    float* p = bad.data<float>();
    std::memset(p + 5, 0, sizeof(float));  // one element past the end (inside the guard)
  }
  EXPECT_EQ(memory::guard_violations(), before + 1);
  // Off: no fill, no guard (plain allocations).
  EXPECT_FALSE(memory::debug_fill(Device::cpu));
  { Tensor t = Tensor::empty({5}); }
  EXPECT_EQ(memory::guard_violations(), before + 1);
}
