// GPU layer scale vs the CPU reference: forward and deterministic dgamma (poisoned, guarded
// outputs). The autograd ops (with residual_add) on CUDA: the op harness (cases_layer_scale.cpp).
#include <gtest/gtest.h>

#include "gpu/gpu_util.h"
#include "kernels/layer_scale.h"
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
