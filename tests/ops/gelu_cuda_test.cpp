// GPU GELU kernels vs the CPU reference (poisoned, guarded outputs). The autograd op on CUDA in
// f32 / tf32 / bf16: the op harness (cases_gelu.cpp).
#include <gtest/gtest.h>

#include "gpu/gpu_util.h"
#include "kernels/gelu.h"
#include "test_util.h"

using namespace hg;

TEST(GpuGelu, KernelsMatchCpuReference) {
  HG_REQUIRE_GPU();
  for (int64_t n : {1, 255, 100003}) {
    Tensor x = test::random({n}, 1 + n, DType::f32, -6, 6), dy = test::random({n}, 2 + n, DType::f32);
    Tensor y_ref = Tensor::empty({n}), dx_ref = Tensor::empty({n});
    kernels::cpu::gelu_forward(x.data<float>(), y_ref.data<float>(), n);
    kernels::cpu::gelu_backward(x.data<float>(), dy.data<float>(), dx_ref.data<float>(), n);
    Tensor xg = x.to(Device::cuda), dyg = dy.to(Device::cuda);
    test::Guarded y({n}), dx({n});
    kernels::cuda::gelu_forward(xg.data<float>(), y.tensor().data<float>(), n);
    kernels::cuda::gelu_backward(xg.data<float>(), dyg.data<float>(), dx.tensor().data<float>(), n);
    EXPECT_LT(test::rel_error(y.tensor(), y_ref), 1e-5) << n;
    EXPECT_LT(test::rel_error(dx.tensor(), dx_ref), 1e-5) << n;
    EXPECT_TRUE(y.guard_intact() && dx.guard_intact()) << n;
  }
}
