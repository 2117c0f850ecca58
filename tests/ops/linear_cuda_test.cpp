// GPU linear: the bias gradient kernel over many rows (more than one chunk) against f64, twice,
// bit-identical. The op against the CPU (f32, tf32, bf16; forward with and without bias, grad_x,
// grad_weight, grad_bias alone and beside grad_weight, odd sizes and ConvNeXt MLP / head shapes,
// into poisoned, guarded buffers): the op harness (cases_linear.cpp).
#include "kernels/linear.h"

#include <gtest/gtest.h>

#include <utility>

#include "gpu/gpu_util.h"
#include "test_util.h"

namespace hg {
namespace {

// fp32 layer tolerance (project rule); the oracle is the CPU in f64 on the same f32 inputs.
constexpr double kTol = 1e-5;

}  // namespace

// Many rows (more than kMaxChunks * 256, so the chunk size grows) and odd column counts; twice,
// bit-identical.
TEST(GpuLinear, BiasGradManyRowsDeterministic) {
  HG_REQUIRE_GPU();
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{300001, 7}, {6272, 96}, {3, 33}}) {
    Tensor gy = test::random({rows, cols}, 5, DType::f32);
    Tensor e = Tensor::empty({cols}, DType::f64);
    Tensor gy64 = gy.to(DType::f64);
    kernels::cpu::bias_grad_rows<double>(rows, cols, gy64.data<double>(), e.data<double>());
    Tensor g = gy.to(Device::cuda);
    test::Guarded a({cols}), b({cols});
    kernels::cuda::bias_grad_rows(rows, cols, g.data<float>(), a.tensor().data<float>());
    kernels::cuda::bias_grad_rows(rows, cols, g.data<float>(), b.tensor().data<float>());
    // A sum of 300k terms in fp32 (chunked) against f64: the bound is relative to max |sum|, which
    // for random signs is ~sqrt(rows); 1e-5 still holds with pairwise-ish chunking.
    EXPECT_LT(test::rel_error(a.tensor(), e), kTol) << rows;
    EXPECT_EQ(a.tensor().to_vector<float>(), b.tensor().to_vector<float>()) << rows;
    EXPECT_TRUE(a.guard_intact() && b.guard_intact());
  }
}

}  // namespace hg
