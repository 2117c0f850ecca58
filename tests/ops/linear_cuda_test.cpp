// GPU linear: the bias gradient kernel over many rows (more than one chunk) against f64, twice,
// bit-identical; the GEMMs with cuBLASLt's algorithm chosen by timing (gemm_autotune) and without.
// The op against the CPU (f32, tf32, bf16; forward with and without bias, grad_x, grad_weight,
// grad_bias alone and beside grad_weight, odd sizes and ConvNeXt MLP / head shapes, into poisoned,
// guarded buffers): the op harness (cases_linear.cpp).
#include "kernels/linear.h"

#include <gtest/gtest.h>

#include <utility>

#include "gpu/gpu_util.h"
#include "kernels/cuda/context.h"
#include "test_util.h"

namespace hg {
namespace {

// fp32 layer tolerance (project rule); the oracle is the CPU in f64 on the same f32 inputs.
constexpr double kTol = 1e-5;

// The CPU linear forward in f64 of f32 x (M, in), w (out, in), b (out): the oracle of the GEMMs.
Tensor forward_f64(const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t M = x.size(0), in = x.size(1), out = w.size(0);
  const Tensor x64 = x.to(DType::f64), w64 = w.to(DType::f64), b64 = b.to(DType::f64);
  Tensor y = Tensor::empty({M, out}, DType::f64);
  kernels::cpu::linear_forward<double>(M, in, out, x64.data<double>(), w64.data<double>(),
                                       b64.data<double>(), y.data<double>());
  return y;
}

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

// gemm_autotune (kernels/cuda/gemm_lt.cpp): a shape's first call times cuBLASLt's candidates,
// writing the output with each, then writes it with the fastest. The forward, grad_x and
// grad_weight of a shape no other test uses (so this call is its first), into poisoned, guarded
// buffers: against f64 (exact fp32 math, TF32 off), the same bits again on the next call (the
// choice is kept), and within rounding of the heuristic's first algorithm (autotune off).
TEST(GpuLinear, AutotunedGemmsMatchTheReferenceAndKeepTheirChoice) {
  HG_REQUIRE_GPU();
  hg::cuda::set_allow_tf32(false);
  const int64_t M = 4099, in = 136, out = 520;
  const Tensor x = test::random({M, in}, 11, DType::f32),
               w = test::random({out, in}, 12, DType::f32);
  const Tensor b = test::random({out}, 13, DType::f32), gy = test::random({M, out}, 14, DType::f32);
  const Tensor y64 = forward_f64(x, w, b);
  Tensor gx64 = Tensor::empty({M, in}, DType::f64), gw64 = Tensor::empty({out, in}, DType::f64);
  const Tensor x64 = x.to(DType::f64), w64 = w.to(DType::f64), gy64 = gy.to(DType::f64);
  kernels::cpu::linear_backward_input<double>(M, in, out, gy64.data<double>(), w64.data<double>(),
                                              gx64.data<double>());
  kernels::cpu::linear_backward_weight<double>(M, in, out, x64.data<double>(), gy64.data<double>(),
                                               gw64.data<double>());
  const Tensor xd = x.to(Device::cuda), wd = w.to(Device::cuda), bd = b.to(Device::cuda),
               gyd = gy.to(Device::cuda);
  struct Outputs {
    test::Guarded y{{M, out}}, gx{{M, in}}, gw{{out, in}};
  };
  auto run = [&](Outputs& o) {
    kernels::cuda::linear_forward(M, in, out, xd.data<float>(), wd.data<float>(), bd.data<float>(),
                                  o.y.tensor().data<float>());
    kernels::cuda::linear_backward_input(M, in, out, gyd.data<float>(), wd.data<float>(),
                                         o.gx.tensor().data<float>());
    kernels::cuda::linear_backward_weight(M, in, out, xd.data<float>(), gyd.data<float>(),
                                          o.gw.tensor().data<float>());
  };
  Outputs first, again, heuristic;
  hg::cuda::set_gemm_autotune(true);
  run(first);  // times the candidates
  run(again);
  hg::cuda::set_gemm_autotune(false);
  run(heuristic);
  hg::cuda::set_gemm_autotune(true);
  const std::pair<Outputs*, const char*> all[] = {
      {&first, "first call"}, {&again, "second call"}, {&heuristic, "heuristic's first"}};
  for (const auto& [o, what] : all) {
    EXPECT_LT(test::rel_error(o->y.tensor(), y64), kTol) << what;
    EXPECT_LT(test::rel_error(o->gx.tensor(), gx64), kTol) << what;
    EXPECT_LT(test::rel_error(o->gw.tensor(), gw64), kTol) << what;
    EXPECT_TRUE(o->y.guard_intact() && o->gx.guard_intact() && o->gw.guard_intact()) << what;
  }
  EXPECT_EQ(first.y.tensor().to_vector<float>(), again.y.tensor().to_vector<float>());
  EXPECT_EQ(first.gx.tensor().to_vector<float>(), again.gx.tensor().to_vector<float>());
  EXPECT_EQ(first.gw.tensor().to_vector<float>(), again.gw.tensor().to_vector<float>());
}

// precision tf32 reaches cuBLASLt: the same GEMM with the switch on rounds its inputs to TF32
// (10-bit mantissas: ~1e-4 relative error for K = 384), with it off it is exact fp32 (~1e-7). The
// harness's tf32 rows only bound the error from above, which exact fp32 also meets, so a switch
// that stopped reaching the GEMMs would pass them.
TEST(GpuLinear, Tf32SwitchReachesTheGemms) {
  HG_REQUIRE_GPU();
  const int64_t M = 512, in = 384, out = 256;
  const Tensor x = test::random({M, in}, 21, DType::f32),
               w = test::random({out, in}, 22, DType::f32);
  const Tensor b = test::random({out}, 23, DType::f32);
  const Tensor y64 = forward_f64(x, w, b);
  const Tensor xd = x.to(Device::cuda), wd = w.to(Device::cuda), bd = b.to(Device::cuda);
  auto error = [&](bool tf32) {
    hg::cuda::set_allow_tf32(tf32);
    test::Guarded y({M, out});
    kernels::cuda::linear_forward(M, in, out, xd.data<float>(), wd.data<float>(), bd.data<float>(),
                                  y.tensor().data<float>());
    hg::cuda::set_allow_tf32(false);
    EXPECT_TRUE(y.guard_intact());
    return test::rel_error(y.tensor(), y64);
  };
  const double exact = error(false), tf32 = error(true);
  EXPECT_LT(exact, 1e-6);
  EXPECT_GT(tf32, 1e-5) << "tf32 on gave fp32's error: the switch did not reach cuBLASLt";
  EXPECT_LT(tf32, 5e-3);  // the harness's tf32 bound
}

}  // namespace hg
