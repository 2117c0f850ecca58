// GPU linear (cuBLAS + bias kernels) against the CPU kernels on random inputs: forward, grad_x,
// grad_weight, grad_bias, odd sizes and ConvNeXt MLP / head shapes, poisoned and guarded outputs,
// deterministic bias gradients (also with more than one chunk of rows). The autograd op on CUDA in
// f32 / tf32 / bf16: the op harness (cases_linear.cpp).
#include "kernels/linear.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu/gpu_util.h"
#include "test_util.h"

namespace hg {
namespace {

// fp32 layer tolerance (project rule); the oracle is the CPU in f64 on the same f32 inputs.
constexpr double kTol = 1e-5;

struct Case {
  int64_t M, in, out;
};
const std::vector<Case> kCases = {
    {2 * 56 * 56, 96, 384},  // ConvNeXt-T stage 1 fc1
    {2 * 7 * 7, 3072, 768},  // stage 4 fc2
    {4, 768, 10},            // head
    {37, 19, 23},            // odd sizes
    {1, 5, 3},
};

void run_case(const Case& c, bool bias) {
  Tensor x = test::random({c.M, c.in}, 1, DType::f32),
         w = test::random({c.out, c.in}, 2, DType::f32);
  Tensor b = test::random({c.out}, 3, DType::f32), gy = test::random({c.M, c.out}, 4, DType::f32);
  // f64 oracle
  Tensor x64 = x.to(DType::f64), w64 = w.to(DType::f64), b64 = b.to(DType::f64),
         gy64 = gy.to(DType::f64);
  Tensor ey = Tensor::empty({c.M, c.out}, DType::f64), egx = Tensor::empty({c.M, c.in}, DType::f64);
  Tensor egw = Tensor::empty({c.out, c.in}, DType::f64), egb = Tensor::empty({c.out}, DType::f64);
  kernels::cpu::linear_forward<double>(c.M, c.in, c.out, x64.data<double>(), w64.data<double>(),
                                       bias ? b64.data<double>() : nullptr, ey.data<double>());
  kernels::cpu::linear_backward_input<double>(c.M, c.in, c.out, gy64.data<double>(),
                                              w64.data<double>(), egx.data<double>());
  kernels::cpu::linear_backward_weight<double>(c.M, c.in, c.out, x64.data<double>(),
                                               gy64.data<double>(), egw.data<double>());
  kernels::cpu::bias_grad_rows<double>(c.M, c.out, gy64.data<double>(), egb.data<double>());

  Tensor xg = x.to(Device::cuda), wg = w.to(Device::cuda), bg = b.to(Device::cuda),
         gyg = gy.to(Device::cuda);
  test::Guarded y({c.M, c.out}), gx({c.M, c.in}), gw({c.out, c.in}), gb({c.out});
  kernels::cuda::linear_forward(c.M, c.in, c.out, xg.data<float>(), wg.data<float>(),
                                bias ? bg.data<float>() : nullptr, y.tensor().data<float>());
  kernels::cuda::linear_backward_input(c.M, c.in, c.out, gyg.data<float>(), wg.data<float>(),
                                       gx.tensor().data<float>());
  kernels::cuda::linear_backward_weight(c.M, c.in, c.out, xg.data<float>(), gyg.data<float>(),
                                        gw.tensor().data<float>());
  kernels::cuda::bias_grad_rows(c.M, c.out, gyg.data<float>(), gb.tensor().data<float>());
  hg::cuda::synchronize();
  const std::string name = str("M", c.M, " in", c.in, " out", c.out, bias ? "" : " no bias");
  EXPECT_LT(test::rel_error(y.tensor(), ey), kTol) << name;
  EXPECT_LT(test::rel_error(gx.tensor(), egx), kTol) << name;
  EXPECT_LT(test::rel_error(gw.tensor(), egw), kTol) << name;
  EXPECT_LT(test::rel_error(gb.tensor(), egb), kTol) << name;
  EXPECT_TRUE(y.guard_intact() && gx.guard_intact() && gw.guard_intact() && gb.guard_intact())
      << name;
}

}  // namespace

TEST(GpuLinear, MatchesCpu) {
  HG_REQUIRE_GPU();
  hg::cuda::set_allow_tf32(false);
  for (const Case& c : kCases) {
    run_case(c, true);
    run_case(c, false);
  }
}

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
