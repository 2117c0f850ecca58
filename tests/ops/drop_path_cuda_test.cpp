// GPU DropPath vs the CPU reference: the per-sample scaling kernel (poisoned, guarded output). The
// layer with the same seed on both devices: the op harness (cases_drop_path.cpp).
#include <gtest/gtest.h>

#include "gpu/gpu_util.h"
#include "kernels/drop_path.h"
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
