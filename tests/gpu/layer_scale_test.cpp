// GPU layer scale vs the CPU reference: forward and deterministic dgamma (poisoned, guarded
// outputs), and the autograd layer with residual_add on CUDA.
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "gpu/gpu_util.h"
#include "kernels/layer_scale.h"
#include "layers/layer_scale.h"
#include "test_util.h"

using namespace hg;

TEST(GpuLayerScale, KernelsMatchCpuReference) {
  HG_REQUIRE_GPU();
  for (Shape s : {Shape{4, 28, 28, 96}, Shape{3, 5, 5, 33}, Shape{1, 1, 1, 5}}) {
    const int64_t C = s.back(), rows = shape_numel(s) / C;
    Tensor x = test::random(s, 1 + C, DType::f32), g = test::random({C}, 2 + C, DType::f32);
    Tensor dy = test::random(s, 3 + C, DType::f32);
    Tensor y_ref = Tensor::empty(s), dg_ref = Tensor::empty({C});
    kernels::cpu::layer_scale_forward(x.data<float>(), g.data<float>(), y_ref.data<float>(), rows, C);
    kernels::cpu::layer_scale_grad_gamma(x.data<float>(), dy.data<float>(), dg_ref.data<float>(), rows, C);
    Tensor xg = x.to(Device::cuda), gg = g.to(Device::cuda), dyg = dy.to(Device::cuda);
    test::Guarded y(s), dg({C});
    kernels::cuda::layer_scale_forward(xg.data<float>(), gg.data<float>(), y.tensor().data<float>(), rows, C);
    kernels::cuda::layer_scale_grad_gamma(xg.data<float>(), dyg.data<float>(), dg.tensor().data<float>(), rows, C);
    EXPECT_LT(test::rel_error(y.tensor(), y_ref), 1e-6) << shape_str(s);
    EXPECT_LT(test::rel_error(dg.tensor(), dg_ref), 1e-5) << shape_str(s);
    EXPECT_TRUE(y.guard_intact() && dg.guard_intact()) << shape_str(s);
    Tensor dg2 = Tensor::empty({C}, DType::f32, Device::cuda);
    kernels::cuda::layer_scale_grad_gamma(xg.data<float>(), dyg.data<float>(), dg2.data<float>(), rows, C);
    EXPECT_EQ(dg2.to_vector<float>(), dg.tensor().to_vector<float>()) << shape_str(s);
  }
}

TEST(GpuLayerScale, AutogradWithResidualMatchesCpu) {
  HG_REQUIRE_GPU();
  const Shape s{2, 7, 7, 40};
  Tensor a = test::random(s, 4, DType::f32), b = test::random(s, 5, DType::f32);
  Tensor g = test::random({40}, 6, DType::f32), gy = test::random(s, 7, DType::f32);
  Tensor ac = a.clone().requires_grad_(), bc = b.clone().requires_grad_(), gc = g.clone().requires_grad_();
  Tensor ag = a.to(Device::cuda).requires_grad_(), bg = b.to(Device::cuda).requires_grad_(),
         gg = g.to(Device::cuda).requires_grad_();
  // One tape per thread: finish the CPU step before recording the GPU one.
  Tensor yc = residual_add(ac, layer_scale(bc, gc));
  autograd::backward(yc, gy);
  Tensor yg = residual_add(ag, layer_scale(bg, gg));
  autograd::backward(yg, gy.to(Device::cuda));
  EXPECT_LT(test::rel_error(yg, yc), 1e-6);
  EXPECT_LT(test::rel_error(ag.grad(), ac.grad()), 1e-6);
  EXPECT_LT(test::rel_error(bg.grad(), bc.grad()), 1e-6);
  EXPECT_LT(test::rel_error(gg.grad(), gc.grad()), 1e-5);
}
