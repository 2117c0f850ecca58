// GPU global average pooling against the CPU kernel on random inputs: forward and backward, odd and
// ConvNeXt head shapes, poisoned and guarded outputs. The autograd op on CUDA in f32 / tf32 / bf16:
// the op harness (cases_pool.cpp).
#include "kernels/pool.h"

#include <gtest/gtest.h>

#include "gpu/gpu_util.h"
#include "test_util.h"

namespace hg {

// fp32 layer tolerance (project rule); the oracle is the CPU in f64 on the same f32 inputs.
constexpr double kPoolTol = 1e-5;

TEST(GpuGlobalAvgPool, MatchesCpu) {
  HG_REQUIRE_GPU();
  for (Shape s :
       {Shape{2, 7, 7, 768}, Shape{3, 5, 3, 37}, Shape{1, 56, 56, 96}, Shape{2, 1, 1, 5}}) {
    const int64_t N = s[0], HW = s[1] * s[2], C = s[3];
    Tensor x = test::random(s, 1, DType::f32), gy = test::random({N, C}, 2, DType::f32);
    Tensor x64 = x.to(DType::f64), gy64 = gy.to(DType::f64);
    Tensor ey = Tensor::empty({N, C}, DType::f64), egx = Tensor::empty(s, DType::f64);
    kernels::cpu::global_avg_pool_forward<double>(N, HW, C, x64.data<double>(), ey.data<double>());
    kernels::cpu::global_avg_pool_backward<double>(N, HW, C, gy64.data<double>(),
                                                   egx.data<double>());
    Tensor xg = x.to(Device::cuda), gyg = gy.to(Device::cuda);
    test::Guarded y({N, C}), gx(s);
    kernels::cuda::global_avg_pool_forward(N, HW, C, xg.data<float>(), y.tensor().data<float>());
    kernels::cuda::global_avg_pool_backward(N, HW, C, gyg.data<float>(), gx.tensor().data<float>());
    hg::cuda::synchronize();
    EXPECT_LT(test::rel_error(y.tensor(), ey), kPoolTol) << shape_str(s);
    EXPECT_LT(test::rel_error(gx.tensor(), egx), kPoolTol) << shape_str(s);
    EXPECT_TRUE(y.guard_intact() && gx.guard_intact()) << shape_str(s);
  }
}

}  // namespace hg
