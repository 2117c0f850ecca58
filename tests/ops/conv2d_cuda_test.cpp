// GPU conv2d (cuDNN, NHWC) against the CPU kernels on random inputs: forward, grad_x, grad_weight,
// grad_bias for ConvNeXt's shapes (depthwise 7x7 and 5x5, patchify 4x4, downsample 2x2) and odd
// ones (grouped, strided, padded, no bias, non-multiple sizes), also all on cuDNN
// (Conv2dBackend::cudnn); outputs poisoned and guarded; deterministic weight gradients; TF32 mode;
// f64 refused on CUDA. The autograd op on CUDA in
// f32 / tf32 / bf16: the op harness (cases_conv2d.cpp).
#include "kernels/conv2d.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "gpu/gpu_util.h"
#include "layers/conv2d.h"
#include "test_util.h"

namespace hg {
namespace {

using kernels::Conv2dShape;
using kernels::make_conv2d_shape;

// fp32 layer tolerance (project rule). The oracle is the CPU kernel in f64 on the same f32 inputs,
// so the bound covers only cuDNN's fp32 rounding (exact FMA math; TF32 is tested separately).
constexpr double kTol = 1e-5;

struct Case {
  const char* name;
  Conv2dShape s;
};

const std::vector<Case> kCases = {
    {"dw7x7_C96_56", make_conv2d_shape(2, 56, 56, 96, 96, 7, 7, 1, 3, 96)},
    {"dw7x7_C768_7", make_conv2d_shape(2, 7, 7, 768, 768, 7, 7, 1, 3, 768)},
    {"dw7x7_odd", make_conv2d_shape(3, 13, 11, 37, 37, 7, 7, 1, 3, 37)},
    {"dw5x5_C192_28", make_conv2d_shape(2, 28, 28, 192, 192, 5, 5, 1, 2, 192)},
    {"dw5x5_stride2_odd", make_conv2d_shape(2, 15, 14, 9, 9, 5, 5, 2, 2, 9)},
    {"patchify4x4_in3", make_conv2d_shape(2, 64, 64, 3, 96, 4, 4, 4, 0, 1)},
    {"patchify4x4_in1_fmnist", make_conv2d_shape(4, 28, 28, 1, 48, 4, 4, 4, 0, 1)},
    {"downsample2x2_96", make_conv2d_shape(2, 28, 28, 96, 192, 2, 2, 2, 0, 1)},
    {"downsample2x2_odd", make_conv2d_shape(3, 7, 9, 5, 10, 2, 2, 2, 0, 1)},
    {"dense3x3_pad1", make_conv2d_shape(2, 9, 10, 16, 24, 3, 3, 1, 1, 1)},
    {"dense3x3_stride2", make_conv2d_shape(2, 11, 10, 6, 7, 3, 3, 2, 1, 1)},
    {"groups2", make_conv2d_shape(2, 8, 7, 8, 6, 3, 3, 1, 1, 2)},
    {"pointwise", make_conv2d_shape(2, 5, 6, 12, 20, 1, 1, 1, 0, 1)},
};

struct Data {
  Tensor x, w, b, gy;  // CPU f32
};

Data make_data(const Conv2dShape& s, uint64_t seed) {
  return {test::random({s.N, s.H, s.W, s.C}, seed, DType::f32),
          test::random({s.O, s.Cg(), s.KH, s.KW}, seed + 1, DType::f32),
          test::random({s.O}, seed + 2, DType::f32),
          test::random({s.N, s.OH, s.OW, s.O}, seed + 3, DType::f32)};
}

// The f64 CPU oracle for all four outputs.
struct Expected {
  Tensor y, gx, gw, gb;
};
Expected cpu_oracle(const Conv2dShape& s, const Data& d, bool bias) {
  Tensor x = d.x.to(DType::f64), w = d.w.to(DType::f64), b = d.b.to(DType::f64),
         gy = d.gy.to(DType::f64);
  Expected e{Tensor::empty({s.N, s.OH, s.OW, s.O}, DType::f64),
             Tensor::empty(x.shape(), DType::f64), Tensor::empty(w.shape(), DType::f64),
             Tensor::empty({s.O}, DType::f64)};
  kernels::cpu::conv2d_forward<double>(s, x.data<double>(), w.data<double>(),
                                       bias ? b.data<double>() : nullptr, e.y.data<double>());
  kernels::cpu::conv2d_backward_data<double>(s, gy.data<double>(), w.data<double>(),
                                             e.gx.data<double>());
  kernels::cpu::conv2d_backward_weight<double>(s, x.data<double>(), gy.data<double>(),
                                               e.gw.data<double>());
  kernels::cpu::conv2d_backward_bias<double>(s, gy.data<double>(), e.gb.data<double>());
  return e;
}

void run_case(const Case& c, bool bias, double tol,
              kernels::cuda::Conv2dBackend backend = kernels::cuda::Conv2dBackend::automatic) {
  const Conv2dShape& s = c.s;
  Data d = make_data(s, 100);
  Expected e = cpu_oracle(s, d, bias);
  Tensor x = d.x.to(Device::cuda), w = d.w.to(Device::cuda), b = d.b.to(Device::cuda),
         gy = d.gy.to(Device::cuda);
  test::Guarded y(e.y.shape()), gx(e.gx.shape()), gw(e.gw.shape()), gb(e.gb.shape());
  kernels::cuda::conv2d_forward(s, x.data<float>(), w.data<float>(),
                                bias ? b.data<float>() : nullptr, y.tensor().data<float>(),
                                backend);
  kernels::cuda::conv2d_backward_data(s, gy.data<float>(), w.data<float>(),
                                      gx.tensor().data<float>(), backend);
  kernels::cuda::conv2d_backward_weight(s, x.data<float>(), gy.data<float>(),
                                        gw.tensor().data<float>(), backend);
  kernels::cuda::conv2d_backward_bias(s, gy.data<float>(), gb.tensor().data<float>());
  hg::cuda::synchronize();
  const std::string name = str(c.name, bias ? "" : " (no bias)",
                               backend == kernels::cuda::Conv2dBackend::cudnn ? " (cuDNN)" : "");
  EXPECT_LT(test::rel_error(y.tensor(), e.y), tol) << name << " forward";
  EXPECT_LT(test::rel_error(gx.tensor(), e.gx), tol) << name << " grad_x";
  EXPECT_LT(test::rel_error(gw.tensor(), e.gw), tol) << name << " grad_weight";
  EXPECT_LT(test::rel_error(gb.tensor(), e.gb), tol) << name << " grad_bias";
  EXPECT_TRUE(y.guard_intact() && gx.guard_intact() && gw.guard_intact() && gb.guard_intact())
      << name;
}

}  // namespace

TEST(GpuConv2d, MatchesCpuAllShapes) {
  HG_REQUIRE_GPU();
  hg::cuda::set_allow_tf32(false);
  for (const Case& c : kCases) run_case(c, true, kTol);
}

// Conv2dBackend::cudnn (bench-layer --cudnn-dw) sends the depthwise and patchify shapes to cuDNN
// too: the same results.
TEST(GpuConv2d, CudnnBackendMatchesCpuAllShapes) {
  HG_REQUIRE_GPU();
  hg::cuda::set_allow_tf32(false);
  for (const Case& c : kCases) run_case(c, true, kTol, kernels::cuda::Conv2dBackend::cudnn);
}

TEST(GpuConv2d, MatchesCpuWithoutBias) {
  HG_REQUIRE_GPU();
  hg::cuda::set_allow_tf32(false);
  for (const Case& c : kCases)
    if (c.s.N * c.s.H * c.s.W * c.s.C < 200000) run_case(c, false, kTol);
}

// TF32 keeps 10 mantissa bits (relative rounding 2^-11 ~ 5e-4 per product), so the bound is looser.
TEST(GpuConv2d, Tf32ModeWithinTf32Bound) {
  HG_REQUIRE_GPU();
  hg::cuda::set_allow_tf32(true);
  run_case(kCases[0], true, 5e-3);
  run_case(kCases[7], true, 5e-3);
  hg::cuda::set_allow_tf32(false);
}

TEST(GpuConv2d, WeightGradientsBitIdenticalRunToRun) {
  HG_REQUIRE_GPU();
  hg::cuda::set_allow_tf32(false);
  for (int i : {0, 5, 7}) {
    const Conv2dShape& s = kCases[static_cast<size_t>(i)].s;
    Data d = make_data(s, 7);
    Tensor x = d.x.to(Device::cuda), gy = d.gy.to(Device::cuda);
    Tensor a = Tensor::empty(d.w.shape(), DType::f32, Device::cuda),
           b = Tensor::empty(d.w.shape(), DType::f32, Device::cuda);
    Tensor ga = Tensor::empty({s.O}, DType::f32, Device::cuda),
           gb = Tensor::empty({s.O}, DType::f32, Device::cuda);
    kernels::cuda::conv2d_backward_weight(s, x.data<float>(), gy.data<float>(), a.data<float>());
    kernels::cuda::conv2d_backward_weight(s, x.data<float>(), gy.data<float>(), b.data<float>());
    kernels::cuda::conv2d_backward_bias(s, gy.data<float>(), ga.data<float>());
    kernels::cuda::conv2d_backward_bias(s, gy.data<float>(), gb.data<float>());
    EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>()) << kCases[static_cast<size_t>(i)].name;
    EXPECT_EQ(ga.to_vector<float>(), gb.to_vector<float>()) << kCases[static_cast<size_t>(i)].name;
  }
}

// f64 on the GPU is refused with a message naming the op.
TEST(GpuConv2d, RefusesF64) {
  HG_REQUIRE_GPU();
  Tensor x64 = test::random({1, 4, 4, 2}, 1).to(Device::cuda),
         w64 = test::random({2, 2, 3, 3}, 2).to(Device::cuda);
  EXPECT_THROW(conv2d(x64, w64, Tensor()), Error);
}

}  // namespace hg
