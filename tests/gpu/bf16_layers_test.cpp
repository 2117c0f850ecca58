// bf16 mixed precision on the GPU against the CPU bf16 reference, layer by layer through autograd:
// bf16 activations, f32 parameters, forward output and every gradient compared. The CPU computes in
// f32 on widened bf16 inputs and rounds its outputs (core/dispatch.h); the GPU rounds at the same
// places but sums in another order, so results may differ by a bf16 rounding step (2^-8 relative)
// where a sum lands near a rounding boundary, and that difference feeds later roundings.
// Tolerance: 2e-2 of the largest value (measured worst on the H200 is printed per case).
// Shapes cover every vector width of the kernels (C % 8 == 0, C % 4 == 0, odd C).
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>

#include "core/autograd.h"
#include "gpu/gpu_util.h"
#include "layers/activation.h"
#include "layers/conv2d.h"
#include "layers/drop_path.h"
#include "layers/layer_scale.h"
#include "layers/linear.h"
#include "layers/norm.h"
#include "layers/pool.h"
#include "test_util.h"

using namespace hg;

namespace {

constexpr double kTol = 2e-2;

struct Case {
  std::vector<Tensor> acts;    ///< activations (f32 values; cast to bf16 for the op)
  std::vector<Tensor> params;  ///< f32 parameters
};

// Runs op on `dev` with bf16 activations and f32 parameters, backward with a bf16 upstream
// gradient; returns {y, grads of the activations..., grads of the parameters...} on the CPU.
std::vector<Tensor> run(const std::function<Tensor(const std::vector<Tensor>&, const std::vector<Tensor>&)>& op,
                        const Case& c, const Tensor& gy_f32, Device dev) {
  // fresh leaves on `dev` (copy_ is not recorded), so the two runs share nothing
  auto leaf = [dev](const Tensor& t, DType dtype) {
    Tensor q = Tensor::empty(t.shape(), dtype, dev);
    q.copy_(t);
    return q.requires_grad_();
  };
  std::vector<Tensor> acts, params;
  for (const Tensor& a : c.acts) acts.push_back(leaf(a, DType::bf16));
  for (const Tensor& p : c.params) params.push_back(leaf(p, DType::f32));
  Tensor y = op(acts, params);
  EXPECT_EQ(y.dtype(), DType::bf16);
  autograd::backward(y, gy_f32.to(DType::bf16).to(dev));
  std::vector<Tensor> out{y.to(Device::cpu)};
  for (const Tensor& a : acts) out.push_back(a.grad().to(Device::cpu));
  for (const Tensor& p : params) {
    EXPECT_EQ(p.grad().dtype(), DType::f32) << "parameter gradients stay f32";
    out.push_back(p.grad().to(Device::cpu));
  }
  return out;
}

void check(const char* name, const std::function<Tensor(const std::vector<Tensor>&, const std::vector<Tensor>&)>& op,
           const Case& c, const Shape& yshape) {
  const Tensor gy = test::random(yshape, 99, DType::f32);
  const std::vector<Tensor> cpu = run(op, c, gy, Device::cpu);
  const std::vector<Tensor> gpu = run(op, c, gy, Device::cuda);
  ASSERT_EQ(cpu.size(), gpu.size());
  double worst = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double e = test::rel_error(gpu[i].to(DType::f64), cpu[i].to(DType::f64));
    EXPECT_LT(e, kTol) << name << " output " << i << " (0 = y, then activation and parameter grads)";
    worst = std::max(worst, e);
  }
  std::printf("[bf16 cuda vs cpu] %-28s worst relative error %.3g\n", name, worst);
}

Tensor rnd(const Shape& s, uint64_t seed, double lo = -1, double hi = 1) {
  return test::random(s, seed, DType::f32, lo, hi);
}

}  // namespace

TEST(GpuBf16, LinearAndGeluLinear) {
  HG_REQUIRE_GPU();
  for (int64_t in : {8, 12, 7}) {
    const int64_t out = 3 * in + 1;
    Case c{{rnd({2, 5, 6, in}, 1)}, {rnd({out, in}, 2, -0.3, 0.3), rnd({out}, 3)}};
    check("linear", [](auto& a, auto& p) { return linear(a[0], p[0], p[1]); }, c, {2, 5, 6, out});
    check("gelu_linear", [](auto& a, auto& p) { return gelu_linear(a[0], p[0], p[1]); }, c, {2, 5, 6, out});
  }
}

TEST(GpuBf16, ElementwiseLayers) {
  HG_REQUIRE_GPU();
  for (int64_t C : {96, 12, 7}) {
    const Shape s{3, 5, 7, C};
    check("gelu", [](auto& a, auto&) { return gelu(a[0]); }, Case{{rnd(s, 4, -4, 4)}, {}}, s);
    Case ln{{rnd(s, 5, -2, 3)}, {rnd({C}, 6, 0.5, 1.5), rnd({C}, 7)}};
    check("layer_norm", [](auto& a, auto& p) { return layer_norm(a[0], p[0], p[1], 1e-6); }, ln, s);
    Case ls{{rnd(s, 8)}, {rnd({C}, 9, 0.1, 1)}};
    check("layer_scale", [](auto& a, auto& p) { return layer_scale(a[0], p[0]); }, ls, s);
    Case rls{{rnd(s, 10), rnd(s, 11)}, {rnd({C}, 12, 0.1, 1)}};
    check("residual_layer_scale", [](auto& a, auto& p) { return residual_layer_scale(a[0], a[1], p[0]); }, rls, s);
    check("global_avg_pool", [](auto& a, auto&) { return global_avg_pool(a[0]); }, Case{{rnd(s, 13)}, {}},
          {3, C});
    check("scale_samples", [](auto& a, auto&) {
      const Tensor scale = Tensor::from_vector<float>({3}, {0.f, 2.f, 1.25f}).to(a[0].device());
      return scale_samples(a[0], scale);
    }, Case{{rnd(s, 14)}, {}}, s);
  }
}

TEST(GpuBf16, Convolutions) {
  HG_REQUIRE_GPU();
  struct ConvCase { int64_t C, O, K, stride, pad, groups; const char* what; };
  const ConvCase cases[] = {
      {96, 96, 7, 1, 3, 96, "depthwise 7x7 (V=8)"}, {12, 12, 5, 1, 2, 12, "depthwise 5x5 (V=4)"},
      {7, 7, 3, 2, 1, 7, "depthwise 3x3 s2 (V=1)"}, {16, 16, 9, 1, 4, 16, "depthwise 9x9 (run-time K)"},
      {16, 32, 2, 2, 0, 1, "patchify 2x2 (GEMM)"}, {3, 24, 4, 4, 0, 1, "patchify 4x4 stem"},
      {8, 12, 3, 1, 1, 1, "dense 3x3 (cuDNN)"}};
  for (const ConvCase& k : cases) {
    const int64_t H = 12, W = 12;
    Case c{{rnd({2, H, W, k.C}, 20)}, {rnd({k.O, k.C / k.groups, k.K, k.K}, 21, -0.3, 0.3), rnd({k.O}, 22)}};
    const int64_t OH = (H + 2 * k.pad - k.K) / k.stride + 1;
    check(k.what, [&](auto& a, auto& p) { return conv2d(a[0], p[0], p[1], int(k.stride), int(k.pad), int(k.groups)); },
          c, {2, OH, OH, k.O});
  }
}
