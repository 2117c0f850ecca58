// GPU LayerNorm: the weight gradients bit-identical run to run (no floating-point atomics), also
// from the backward that skips dx. The op against the CPU (f32, tf32, bf16; y, dx, dweight, dbias
// into poisoned, guarded buffers, at the shapes below): the op harness (cases_norm.cpp).
#include <gtest/gtest.h>

#include "gpu/gpu_util.h"
#include "kernels/layernorm.h"
#include "test_util.h"

using namespace hg;

namespace {
Tensor to_gpu(const Tensor& t) { return t.to(Device::cuda); }

void check_case(const Shape& shape, uint64_t seed) {
  const int64_t C = shape.back(), rows = shape_numel(shape) / C;
  Tensor xg = to_gpu(test::random(shape, seed, DType::f32, -2, 3));
  Tensor wg = to_gpu(test::random({C}, seed + 1, DType::f32, 0.5, 1.5));
  Tensor bg = to_gpu(test::random({C}, seed + 2, DType::f32));
  Tensor dyg = to_gpu(test::random(shape, seed + 3, DType::f32));
  auto gpu = [&](int64_t n) { return Tensor::empty({n}, DType::f32, Device::cuda); };
  Tensor y = Tensor::empty(shape, DType::f32, Device::cuda), dx = y.clone();
  Tensor mean = gpu(rows), rstd = gpu(rows), dw = gpu(C), db = gpu(C), dw2 = gpu(C), db2 = gpu(C);
  kernels::cuda::layernorm_forward(xg.data<float>(), wg.data<float>(), bg.data<float>(),
                                   y.data<float>(), mean.data<float>(), rstd.data<float>(), rows, C,
                                   1e-6f);
  kernels::cuda::layernorm_backward<float>(xg.data<float>(), wg.data<float>(), mean.data<float>(),
                                           rstd.data<float>(), dyg.data<float>(), dx.data<float>(),
                                           dw.data<float>(), db.data<float>(), rows, C);
  // a second run, without dx: the same bits
  kernels::cuda::layernorm_backward<float>(xg.data<float>(), wg.data<float>(), mean.data<float>(),
                                           rstd.data<float>(), dyg.data<float>(), nullptr,
                                           dw2.data<float>(), db2.data<float>(), rows, C);
  const std::string what = shape_str(shape);
  EXPECT_EQ(dw2.to_vector<float>(), dw.to_vector<float>()) << what;
  EXPECT_EQ(db2.to_vector<float>(), db.to_vector<float>()) << what;
}
}  // namespace

TEST(GpuLayerNorm, WeightGradientsBitIdenticalRunToRun) {
  HG_REQUIRE_GPU();
  check_case({2, 7, 9, 96}, 1);     // ConvNeXt-like NHWC
  check_case({3, 5, 5, 33}, 10);    // odd C, C not a multiple of 32
  check_case({3, 1000}, 20);        // large C, few rows
  check_case({4, 32, 32, 64}, 30);  // 4096 rows: many row chunks for dweight / dbias
  check_case({1, 1, 1, 7}, 40);     // a single row
  // The one-pass backward (dx and the parameter sums, rows strided over one wave of blocks) at
  // ConvNeXt-T's widths: 4 and 6 (of 8) vectors a lane, a full 8, and more rows than one sweep.
  check_case({2, 28, 28, 384}, 50);
  check_case({1, 40, 40, 768}, 60);
  check_case({2, 3, 1024}, 70);
  check_case({16, 56, 56, 96}, 80);
}
