// The hand-written CUDA depthwise conv (kernels/depthwise_conv.h) against the CPU reference loops
// in f64 on random inputs: forward, grad_x, grad_weight, grad_bias for K 3/5/7 (compiled) and
// other K (run-time path), stride 1/2, odd sizes, C not a multiple of 4, ConvNeXt's shapes;
// outputs poisoned (NaN) and guarded; the scalar path on misaligned pointers; bit-identical
// weight gradients; the conv2d dispatch; errors; a timing line. The autograd op on CUDA in
// f32 / tf32 / bf16: the op harness (cases_conv2d.cpp, dw* cases).
#include "kernels/depthwise_conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "gpu/gpu_util.h"
#include "kernels/conv2d.h"
#include "kernels/cuda/check.h"
#include "layers/conv2d.h"
#include "test_util.h"

namespace hg {
namespace {

using kernels::Conv2dShape;
using kernels::make_conv2d_shape;

constexpr double kTol = 1e-5;  // fp32 layer tolerance (project rule), vs an f64 oracle

struct Case {
  const char* name;
  Conv2dShape s;
};

Conv2dShape dw(int64_t N, int64_t H, int64_t W, int64_t C, int64_t K, int64_t stride,
               int64_t pad) {
  return make_conv2d_shape(N, H, W, C, C, K, K, stride, pad, C);
}

const std::vector<Case> kCases = {
    {"k7_C96_56 (ConvNeXt stage 1)", dw(2, 56, 56, 96, 7, 1, 3)},
    {"k7_C768_7 (ConvNeXt stage 4)", dw(2, 7, 7, 768, 7, 1, 3)},
    {"k7_odd_C37", dw(3, 13, 11, 37, 7, 1, 3)},
    {"k7_stride2_odd_C37", dw(2, 13, 11, 37, 7, 2, 3)},
    {"k7_stride2_C20", dw(2, 16, 15, 20, 7, 2, 3)},
    {"k7_valid_C8", dw(2, 12, 10, 8, 7, 1, 0)},
    {"k7_pad5_C6", dw(1, 6, 9, 6, 7, 1, 5)},
    {"k5_C40", dw(2, 17, 15, 40, 5, 1, 2)},
    {"k5_stride2_C9", dw(2, 15, 14, 9, 5, 2, 2)},
    {"k5_stride2_pad1_C12", dw(2, 14, 13, 12, 5, 2, 1)},
    {"k3_C13", dw(2, 9, 11, 13, 3, 1, 1)},
    {"k3_stride2_C20", dw(2, 10, 9, 20, 3, 2, 1)},
    {"k3_stride2_pad0_unused_row_C4", dw(2, 8, 8, 4, 3, 2, 0)},
    {"k3_C3_tiny", dw(1, 5, 4, 3, 3, 1, 1)},
    {"k4_even_C12", dw(2, 9, 10, 12, 4, 1, 1)},
    {"k4_even_stride2_C7", dw(2, 11, 9, 7, 4, 2, 1)},
    {"k2_stride2_C16", dw(2, 8, 7, 16, 2, 2, 0)},
    {"k1_C5", dw(2, 4, 6, 5, 1, 1, 0)},
    {"k9_C16", dw(2, 12, 11, 16, 9, 1, 4)},
    {"k31_C40 (staged filters shrink the block)", dw(1, 20, 18, 40, 31, 1, 15)},
};

struct Data {
  Tensor x, w, b, gy;  // CPU f32
};

Data make_data(const Conv2dShape& s, uint64_t seed) {
  return {test::random({s.N, s.H, s.W, s.C}, seed, DType::f32),
          test::random({s.O, 1, s.KH, s.KW}, seed + 1, DType::f32),
          test::random({s.O}, seed + 2, DType::f32),
          test::random({s.N, s.OH, s.OW, s.O}, seed + 3, DType::f32)};
}

// The f64 oracle: the definition as plain loops (kernels::cpu::conv2d_*_reference).
struct Expected {
  Tensor y, gx, gw, gb;
};
Expected cpu_oracle(const Conv2dShape& s, const Data& d, bool bias) {
  Tensor x = d.x.to(DType::f64), w = d.w.to(DType::f64), b = d.b.to(DType::f64),
         gy = d.gy.to(DType::f64);
  Expected e{Tensor::empty({s.N, s.OH, s.OW, s.O}, DType::f64),
             Tensor::empty(x.shape(), DType::f64), Tensor::empty(w.shape(), DType::f64),
             Tensor::empty({s.O}, DType::f64)};
  kernels::cpu::conv2d_forward_reference<double>(
      s, x.data<double>(), w.data<double>(), bias ? b.data<double>() : nullptr, e.y.data<double>());
  kernels::cpu::conv2d_backward_data_reference<double>(s, gy.data<double>(), w.data<double>(),
                                                       e.gx.data<double>());
  kernels::cpu::conv2d_backward_weight_reference<double>(s, x.data<double>(), gy.data<double>(),
                                                         e.gw.data<double>());
  kernels::cpu::conv2d_backward_bias<double>(s, gy.data<double>(), e.gb.data<double>());
  return e;
}

void run_case(const Case& c, bool bias) {
  const Conv2dShape& s = c.s;
  ASSERT_TRUE(kernels::cuda::depthwise_conv_supported(s)) << c.name;
  Data d = make_data(s, 100);
  Expected e = cpu_oracle(s, d, bias);
  Tensor x = d.x.to(Device::cuda), w = d.w.to(Device::cuda), b = d.b.to(Device::cuda),
         gy = d.gy.to(Device::cuda);
  test::Guarded y(e.y.shape()), gx(e.gx.shape()), gw(e.gw.shape()), gb(e.gb.shape());
  kernels::cuda::depthwise_conv_forward(s, x.data<float>(), w.data<float>(),
                                        bias ? b.data<float>() : nullptr, y.tensor().data<float>());
  kernels::cuda::depthwise_conv_backward_data(s, gy.data<float>(), w.data<float>(),
                                              gx.tensor().data<float>());
  kernels::cuda::depthwise_conv_backward_weight(s, x.data<float>(), gy.data<float>(),
                                                gw.tensor().data<float>(),
                                                gb.tensor().data<float>());
  hg::cuda::synchronize();
  const std::string name = str(c.name, bias ? "" : " (no bias)");
  const double ey = test::rel_error(y.tensor(), e.y), egx = test::rel_error(gx.tensor(), e.gx),
               egw = test::rel_error(gw.tensor(), e.gw), egb = test::rel_error(gb.tensor(), e.gb);
  EXPECT_LT(ey, kTol) << name << " forward";
  EXPECT_LT(egx, kTol) << name << " grad_x";
  EXPECT_LT(egw, kTol) << name << " grad_weight";
  EXPECT_LT(egb, kTol) << name << " grad_bias";
  EXPECT_TRUE(y.guard_intact() && gx.guard_intact() && gw.guard_intact() && gb.guard_intact())
      << name << ": a kernel wrote past its output";
  std::printf("  %-44s y %.1e  gx %.1e  gw %.1e  gb %.1e\n", name.c_str(), ey, egx, egw, egb);
}

// A CUDA f32 buffer of n floats starting one float past a 16-byte boundary (forces V = 1),
// filled from `src` (or NaN when src is undefined).
struct Misaligned {
  Tensor buffer;
  float* ptr;
  Misaligned(int64_t n, const Tensor& src) {
    buffer = Tensor::full({n + 1}, std::nan(""), DType::f32, Device::cuda);
    ptr = buffer.data<float>() + 1;
    if (src.defined()) {
      std::vector<float> v = src.to_vector<float>();
      HG_CUDA_CHECK(cudaMemcpy(ptr, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
    }
  }
  Tensor read(const Shape& shape) const {
    std::vector<float> v = buffer.to_vector<float>();
    return Tensor::from_vector<float>(shape, std::vector<float>(v.begin() + 1, v.end()));
  }
};

}  // namespace

TEST(GpuDepthwiseConv, MatchesCpuReferenceAllShapes) {
  HG_REQUIRE_GPU();
  for (const Case& c : kCases) run_case(c, true);
}

TEST(GpuDepthwiseConv, MatchesCpuReferenceWithoutBias) {
  HG_REQUIRE_GPU();
  for (int i : {2, 3, 9, 15}) run_case(kCases[static_cast<size_t>(i)], false);
}

// C % 4 == 0 but pointers off a 16-byte boundary: the scalar (V = 1) path must still be exact.
TEST(GpuDepthwiseConv, MisalignedPointersTakeScalarPath) {
  HG_REQUIRE_GPU();
  for (int i : {0, 4, 9}) {
    const Case& c = kCases[static_cast<size_t>(i)];
    const Conv2dShape& s = c.s;
    Data d = make_data(s, 31);
    Expected e = cpu_oracle(s, d, true);
    Tensor w = d.w.to(Device::cuda), b = d.b.to(Device::cuda);
    Misaligned x(d.x.numel(), d.x), gy(d.gy.numel(), d.gy);
    Misaligned y(e.y.numel(), Tensor()), gx(e.gx.numel(), Tensor());
    kernels::cuda::depthwise_conv_forward(s, x.ptr, w.data<float>(), b.data<float>(), y.ptr);
    kernels::cuda::depthwise_conv_backward_data(s, gy.ptr, w.data<float>(), gx.ptr);
    hg::cuda::synchronize();
    EXPECT_LT(test::rel_error(y.read(e.y.shape()), e.y), kTol) << c.name << " forward";
    EXPECT_LT(test::rel_error(gx.read(e.gx.shape()), e.gx), kTol) << c.name << " grad_x";
  }
}

TEST(GpuDepthwiseConv, WeightGradientsBitIdenticalRunToRun) {
  HG_REQUIRE_GPU();
  for (int i : {0, 1, 3, 15, 18}) {
    const Case& c = kCases[static_cast<size_t>(i)];
    const Conv2dShape& s = c.s;
    Data d = make_data(s, 7);
    Tensor x = d.x.to(Device::cuda), gy = d.gy.to(Device::cuda);
    std::vector<float> gw[2], gb[2];
    for (int run = 0; run < 2; ++run) {
      test::Guarded w(d.w.shape()), b({s.O});
      kernels::cuda::depthwise_conv_backward_weight(s, x.data<float>(), gy.data<float>(),
                                                    w.tensor().data<float>(),
                                                    b.tensor().data<float>());
      gw[run] = w.tensor().to_vector<float>();
      gb[run] = b.tensor().to_vector<float>();
    }
    EXPECT_EQ(gw[0], gw[1]) << c.name;
    EXPECT_EQ(gb[0], gb[1]) << c.name;
  }
}

// kernels::cuda::conv2d_* route depthwise shapes here (Conv2dBackend::automatic) or to cuDNN
// (Conv2dBackend::cudnn, bench-layer --cudnn-dw): the results match the oracle either way.
TEST(GpuDepthwiseConv, Conv2dDispatchMatchesCpu) {
  HG_REQUIRE_GPU();
  hg::cuda::set_allow_tf32(false);  // cuDNN in exact fp32
  using kernels::cuda::Conv2dBackend;
  for (const Conv2dBackend backend : {Conv2dBackend::automatic, Conv2dBackend::cudnn})
    for (int i : {2, 8}) {
      const Case& c = kCases[static_cast<size_t>(i)];
      const Conv2dShape& s = c.s;
      const std::string name =
          str(c.name, backend == Conv2dBackend::cudnn ? " (cuDNN)" : " (ours)");
      Data d = make_data(s, 55);
      Expected e = cpu_oracle(s, d, true);
      Tensor x = d.x.to(Device::cuda), w = d.w.to(Device::cuda), b = d.b.to(Device::cuda),
             gy = d.gy.to(Device::cuda);
      test::Guarded y(e.y.shape()), gx(e.gx.shape()), gw(e.gw.shape());
      kernels::cuda::conv2d_forward(s, x.data<float>(), w.data<float>(), b.data<float>(),
                                    y.tensor().data<float>(), backend);
      kernels::cuda::conv2d_backward_data(s, gy.data<float>(), w.data<float>(),
                                          gx.tensor().data<float>(), backend);
      kernels::cuda::conv2d_backward_weight(s, x.data<float>(), gy.data<float>(),
                                            gw.tensor().data<float>(), backend);
      hg::cuda::synchronize();
      EXPECT_LT(test::rel_error(y.tensor(), e.y), kTol) << name;
      EXPECT_LT(test::rel_error(gx.tensor(), e.gx), kTol) << name;
      EXPECT_LT(test::rel_error(gw.tensor(), e.gw), kTol) << name;
      EXPECT_TRUE(y.guard_intact() && gx.guard_intact() && gw.guard_intact()) << name;
    }
}

// conv2d_backward_weight_bias: our depthwise weight gradient with its bias sums in the same pass
// (ours), or the weight gradient and the bias's row sums (cuDNN): both match the oracle, and ours
// gives the very weights conv2d_backward_weight gives (the same kernel and order).
TEST(GpuDepthwiseConv, WeightAndBiasGradientsInOneCallMatchCpu) {
  HG_REQUIRE_GPU();
  hg::cuda::set_allow_tf32(false);  // cuDNN in exact fp32
  using kernels::cuda::Conv2dBackend;
  for (const Conv2dBackend backend : {Conv2dBackend::automatic, Conv2dBackend::cudnn})
    for (int i : {0, 2, 3, 8, 14}) {
      const Case& c = kCases[static_cast<size_t>(i)];
      const Conv2dShape& s = c.s;
      const std::string name =
          str(c.name, backend == Conv2dBackend::cudnn ? " (cuDNN)" : " (ours)");
      Data d = make_data(s, 57);
      Expected e = cpu_oracle(s, d, true);
      Tensor x = d.x.to(Device::cuda), gy = d.gy.to(Device::cuda);
      test::Guarded gw(e.gw.shape()), gb(e.gb.shape()), gw_alone(e.gw.shape());
      kernels::cuda::conv2d_backward_weight_bias(s, x.data<float>(), gy.data<float>(),
                                                 gw.tensor().data<float>(),
                                                 gb.tensor().data<float>(), backend);
      kernels::cuda::conv2d_backward_weight(s, x.data<float>(), gy.data<float>(),
                                            gw_alone.tensor().data<float>(), backend);
      hg::cuda::synchronize();
      EXPECT_LT(test::rel_error(gw.tensor(), e.gw), kTol) << name;
      EXPECT_LT(test::rel_error(gb.tensor(), e.gb), kTol) << name;
      EXPECT_EQ(gw.tensor().to_vector<float>(), gw_alone.tensor().to_vector<float>()) << name;
      EXPECT_TRUE(gw.guard_intact() && gb.guard_intact() && gw_alone.guard_intact()) << name;
    }
}

TEST(GpuDepthwiseConv, UnsupportedShapesThrow) {
  HG_REQUIRE_GPU();
  const std::vector<Conv2dShape> bad = {
      make_conv2d_shape(1, 8, 8, 4, 4, 3, 3, 1, 1, 1),   // dense, not depthwise
      make_conv2d_shape(1, 8, 8, 4, 8, 3, 3, 1, 1, 4),   // channel multiplier 2
      make_conv2d_shape(1, 8, 8, 4, 4, 3, 5, 1, 1, 4),   // not square
      make_conv2d_shape(1, 9, 9, 4, 4, 3, 3, 3, 1, 4),   // stride 3
      make_conv2d_shape(1, 40, 40, 4, 4, 33, 33, 1, 16, 4),  // K > kDepthwiseMaxK
  };
  Tensor buf = Tensor::full({1 << 16}, 1.0, DType::f32, Device::cuda);
  float* p = buf.data<float>();
  for (const Conv2dShape& s : bad) {
    EXPECT_FALSE(kernels::cuda::depthwise_conv_supported(s));
    EXPECT_THROW(kernels::cuda::depthwise_conv_forward(s, p, p, nullptr, p), Error);
    EXPECT_THROW(kernels::cuda::depthwise_conv_backward_data(s, p, p, p), Error);
    EXPECT_THROW(kernels::cuda::depthwise_conv_backward_weight(s, p, p, p, nullptr), Error);
  }
  try {
    kernels::cuda::depthwise_conv_forward(bad[3], p, p, nullptr, p);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stride 3"), std::string::npos) << e.what();
  }
}

// ConvNeXt-T stage 1 at batch 64 (the shape of the brief): prints the time of each pass for the
// maintainer's comparison with cuDNN / PyTorch (docs/anchors.md); asserts the two timed weight
// gradients agree bit for bit and the outputs are finite.
TEST(GpuDepthwiseConv, TimingConvNeXtStage1Batch64) {
  HG_REQUIRE_GPU();
  const Conv2dShape s = dw(64, 56, 56, 96, 7, 1, 3);
  Tensor x = test::random({s.N, s.H, s.W, s.C}, 3, DType::f32).to(Device::cuda);
  Tensor gy = test::random({s.N, s.OH, s.OW, s.C}, 4, DType::f32).to(Device::cuda);
  Tensor w = test::random({s.C, 1, 7, 7}, 5, DType::f32).to(Device::cuda);
  Tensor b = test::random({s.C}, 6, DType::f32).to(Device::cuda);
  Tensor y = Tensor::empty(gy.shape(), DType::f32, Device::cuda);
  Tensor gx = Tensor::empty(x.shape(), DType::f32, Device::cuda);
  Tensor gw[2] = {Tensor::empty(w.shape(), DType::f32, Device::cuda),
                  Tensor::empty(w.shape(), DType::f32, Device::cuda)};
  Tensor gb = Tensor::empty(b.shape(), DType::f32, Device::cuda);
  cudaEvent_t ev[4];
  for (auto& e : ev) HG_CUDA_CHECK(cudaEventCreate(&e));
  constexpr int kReps = 10;
  float ms[3] = {0, 0, 0};
  for (int round = 0; round < 2; ++round) {  // round 0 warms up
    HG_CUDA_CHECK(cudaEventRecord(ev[0]));
    for (int r = 0; r < kReps; ++r)
      kernels::cuda::depthwise_conv_forward(s, x.data<float>(), w.data<float>(), b.data<float>(),
                                            y.data<float>());
    HG_CUDA_CHECK(cudaEventRecord(ev[1]));
    for (int r = 0; r < kReps; ++r)
      kernels::cuda::depthwise_conv_backward_data(s, gy.data<float>(), w.data<float>(),
                                                  gx.data<float>());
    HG_CUDA_CHECK(cudaEventRecord(ev[2]));
    for (int r = 0; r < kReps; ++r)
      kernels::cuda::depthwise_conv_backward_weight(s, x.data<float>(), gy.data<float>(),
                                                    gw[r % 2].data<float>(), gb.data<float>());
    HG_CUDA_CHECK(cudaEventRecord(ev[3]));
    HG_CUDA_CHECK(cudaEventSynchronize(ev[3]));
    for (int k = 0; k < 3; ++k) HG_CUDA_CHECK(cudaEventElapsedTime(&ms[k], ev[k], ev[k + 1]));
  }
  for (auto& e : ev) HG_CUDA_CHECK_NOTHROW(cudaEventDestroy(e));
  std::printf("  depthwise 7x7 N64 C96 56x56: forward %.3f ms, backward data %.3f ms, "
              "backward weight+bias %.3f ms, step %.3f ms (cuDNN step was 18.3 ms, PyTorch 2.88)\n",
              ms[0] / kReps, ms[1] / kReps, ms[2] / kReps, (ms[0] + ms[1] + ms[2]) / kReps);
  EXPECT_EQ(gw[0].to_vector<float>(), gw[1].to_vector<float>());
  for (const Tensor* t : {&y, &gx, &gb}) {
    const std::vector<float> v = t->to_vector<float>();
    bool finite = true;
    for (float f : v) finite = finite && std::isfinite(f);
    EXPECT_TRUE(finite);
  }
}

}  // namespace hg
