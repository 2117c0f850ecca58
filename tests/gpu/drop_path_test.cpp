// GPU DropPath vs the CPU reference: the per-sample scaling kernel (poisoned, guarded output) and
// the layer with the same seed on both devices, forward and backward.
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "core/random.h"
#include "gpu/gpu_util.h"
#include "kernels/drop_path.h"
#include "layers/drop_path.h"
#include "test_util.h"

using namespace hg;

TEST(GpuDropPath, ScaleRowsMatchesCpu) {
  HG_REQUIRE_GPU();
  for (Shape s : {Shape{8, 14, 14, 48}, Shape{3, 5}, Shape{1, 7}}) {
    const int64_t N = s[0], inner = shape_numel(s) / N;
    Tensor x = test::random(s, 1 + N, DType::f32), scale = test::random({N}, 2 + N, DType::f32, 0, 2);
    Tensor y_ref = Tensor::empty(s);
    kernels::cpu::scale_rows(x.data<float>(), scale.data<float>(), y_ref.data<float>(), N, inner);
    Tensor xg = x.to(Device::cuda), sg = scale.to(Device::cuda);
    test::Guarded y(s);
    kernels::cuda::scale_rows(xg.data<float>(), sg.data<float>(), y.tensor().data<float>(), N, inner);
    EXPECT_LT(test::rel_error(y.tensor(), y_ref), 1e-6) << shape_str(s);  // one multiply: exact
    EXPECT_TRUE(y.guard_intact()) << shape_str(s);
  }
}

TEST(GpuDropPath, LayerSameSeedSameResultOnBothDevices) {
  HG_REQUIRE_GPU();
  const Shape s{16, 4, 4, 8};
  Tensor x = test::random(s, 3, DType::f32), gy = test::random(s, 4, DType::f32);
  Tensor xc = x.clone().requires_grad_(), xg = x.to(Device::cuda).requires_grad_();
  Generator gc(9), gg(9);
  // One tape per thread: finish the CPU step before recording the GPU one.
  Tensor yc = drop_path(xc, 0.4, true, gc);
  autograd::backward(yc, gy);
  Tensor yg = drop_path(xg, 0.4, true, gg);
  autograd::backward(yg, gy.to(Device::cuda));
  EXPECT_LT(test::rel_error(yg, yc), 1e-6);
  EXPECT_LT(test::rel_error(xg.grad(), xc.grad()), 1e-6);
}
