// GPU layer scale: dgamma bit-identical run to run (no floating-point atomics). The op against the
// CPU (f32, tf32, bf16; y, dx and dgamma into poisoned, guarded buffers): the op harness
// (cases_layer_scale.cpp).
#include <gtest/gtest.h>

#include "gpu/gpu_util.h"
#include "kernels/layer_scale.h"
#include "test_util.h"

using namespace hg;

TEST(GpuLayerScale, GradGammaBitIdenticalRunToRun) {
  HG_REQUIRE_GPU();
  for (Shape s : {Shape{4, 28, 28, 96}, Shape{3, 5, 5, 33}, Shape{1, 1, 1, 5}}) {
    const int64_t C = s.back(), rows = shape_numel(s) / C;
    Tensor xg = test::random(s, 1 + C, DType::f32).to(Device::cuda);
    Tensor dyg = test::random(s, 3 + C, DType::f32).to(Device::cuda);
    Tensor dg = Tensor::empty({C}, DType::f32, Device::cuda), dg2 = dg.clone();
    kernels::cuda::layer_scale_grad_gamma(xg.data<float>(), dyg.data<float>(), dg.data<float>(),
                                          rows, C);
    kernels::cuda::layer_scale_grad_gamma(xg.data<float>(), dyg.data<float>(), dg2.data<float>(), rows, C);
    EXPECT_EQ(dg2.to_vector<float>(), dg.to_vector<float>()) << shape_str(s);
  }
}
