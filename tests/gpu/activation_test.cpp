// GPU GELU vs the CPU reference (poisoned, guarded outputs), kernels and the autograd layer.
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "gpu/gpu_util.h"
#include "kernels/gelu.h"
#include "layers/activation.h"
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

TEST(GpuGelu, AutogradLayerMatchesCpu) {
  HG_REQUIRE_GPU();
  Tensor x = test::random({4, 8, 8, 24}, 3, DType::f32, -4, 4), gy = test::random({4, 8, 8, 24}, 4, DType::f32);
  Tensor xc = x.clone().requires_grad_(), xg = x.to(Device::cuda).requires_grad_();
  // One tape per thread: finish the CPU step before recording the GPU one.
  Tensor yc = gelu(xc);
  autograd::backward(yc, gy);
  Tensor yg = gelu(xg);
  autograd::backward(yg, gy.to(Device::cuda));
  EXPECT_LT(test::rel_error(yg, yc), 1e-5);
  EXPECT_LT(test::rel_error(xg.grad(), xc.grad()), 1e-5);
}
