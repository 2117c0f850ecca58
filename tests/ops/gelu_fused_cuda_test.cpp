// kernels::cuda::gelu_forward_backward (one pass: GELU and its backward) against the CPU reference.
#include <gtest/gtest.h>

#include "gpu/gpu_util.h"
#include "kernels/gelu.h"
#include "test_util.h"

using namespace hg;

TEST(GpuGeluFused, ForwardBackwardMatchesCpu) {
  HG_REQUIRE_GPU();
  const int64_t n = 100003;  // odd: tail handling
  Tensor x = test::random({n}, 1, DType::f32, -6, 6), dy = test::random({n}, 2, DType::f32);
  Tensor y_ref = Tensor::empty({n}), dx_ref = Tensor::empty({n});
  kernels::cpu::gelu_forward_backward(x.data<float>(), dy.data<float>(), y_ref.data<float>(), dx_ref.data<float>(), n);
  Tensor xg = x.to(Device::cuda), dyg = dy.to(Device::cuda);
  test::Guarded y({n}), dx({n});  // poisoned, with guard floats after
  kernels::cuda::gelu_forward_backward(xg.data<float>(), dyg.data<float>(), y.tensor().data<float>(),
                                       dx.tensor().data<float>(), n);
  EXPECT_LT(test::rel_error(y.tensor(), y_ref), 1e-5);
  EXPECT_LT(test::rel_error(dx.tensor(), dx_ref), 1e-5);
  EXPECT_TRUE(y.guard_intact());
  EXPECT_TRUE(dx.guard_intact());
}
