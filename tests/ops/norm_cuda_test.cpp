// GPU LayerNorm vs the CPU reference: forward, backward (dx, dweight, dbias) with poisoned, guarded
// outputs at several shapes (odd C, large C, many rows for the chunked weight gradients),
// bit-identical weight gradients run to run. The autograd op on CUDA in f32 / tf32 / bf16: the op
// harness (cases_norm.cpp).
#include <gtest/gtest.h>

#include "gpu/gpu_util.h"
#include "kernels/layernorm.h"
#include "test_util.h"

using namespace hg;

namespace {
Tensor to_gpu(const Tensor& t) { return t.to(Device::cuda); }


void check_case(const Shape& shape, uint64_t seed) {
  const int64_t C = shape.back(), rows = shape_numel(shape) / C;
  Tensor x = test::random(shape, seed, DType::f32, -2, 3);
  Tensor w = test::random({C}, seed + 1, DType::f32, 0.5, 1.5), b = test::random({C}, seed + 2, DType::f32);
  Tensor dy = test::random(shape, seed + 3, DType::f32);
  // CPU reference (f32 storage, double accumulation)
  Tensor y_ref = Tensor::empty(shape), mean_ref = Tensor::empty({rows}), rstd_ref = Tensor::empty({rows});
  kernels::cpu::layernorm_forward(x.data<float>(), w.data<float>(), b.data<float>(), y_ref.data<float>(),
                                  mean_ref.data<float>(), rstd_ref.data<float>(), rows, C, 1e-6);
  Tensor dx_ref = Tensor::empty(shape), dw_ref = Tensor::empty({C}), db_ref = Tensor::empty({C});
  kernels::cpu::layernorm_backward(x.data<float>(), w.data<float>(), mean_ref.data<float>(),
                                   rstd_ref.data<float>(), dy.data<float>(), dx_ref.data<float>(),
                                   dw_ref.data<float>(), db_ref.data<float>(), rows, C);
  // GPU
  Tensor xg = to_gpu(x), wg = to_gpu(w), bg = to_gpu(b), dyg = to_gpu(dy);
  test::Guarded y(shape), mean({rows}), rstd({rows}), dx(shape), dw({C}), db({C});
  kernels::cuda::layernorm_forward(xg.data<float>(), wg.data<float>(), bg.data<float>(), y.tensor().data<float>(),
                                   mean.tensor().data<float>(), rstd.tensor().data<float>(), rows, C, 1e-6f);
  kernels::cuda::layernorm_backward<float>(xg.data<float>(), wg.data<float>(), mean.tensor().data<float>(),
                                    rstd.tensor().data<float>(), dyg.data<float>(), dx.tensor().data<float>(),
                                    dw.tensor().data<float>(), db.tensor().data<float>(), rows, C);
  const std::string what = shape_str(shape);
  EXPECT_LT(test::rel_error(y.tensor(), y_ref), 1e-5) << what;
  EXPECT_LT(test::rel_error(mean.tensor(), mean_ref), 1e-5) << what;
  EXPECT_LT(test::rel_error(rstd.tensor(), rstd_ref), 1e-5) << what;
  EXPECT_LT(test::rel_error(dx.tensor(), dx_ref), 1e-5) << what;
  EXPECT_LT(test::rel_error(dw.tensor(), dw_ref), 1e-5) << what;
  EXPECT_LT(test::rel_error(db.tensor(), db_ref), 1e-5) << what;
  for (test::Guarded* g : {&y, &mean, &rstd, &dx, &dw, &db}) EXPECT_TRUE(g->guard_intact()) << what;

  // Deterministic weight gradients: a second run gives the same bits.
  Tensor dw2 = Tensor::empty({C}, DType::f32, Device::cuda), db2 = Tensor::empty({C}, DType::f32, Device::cuda);
  kernels::cuda::layernorm_backward<float>(xg.data<float>(), wg.data<float>(), mean.tensor().data<float>(),
                                    rstd.tensor().data<float>(), dyg.data<float>(), nullptr, dw2.data<float>(),
                                    db2.data<float>(), rows, C);
  EXPECT_EQ(dw2.to_vector<float>(), dw.tensor().to_vector<float>()) << what;
  EXPECT_EQ(db2.to_vector<float>(), db.tensor().to_vector<float>()) << what;
}
}  // namespace

TEST(GpuLayerNorm, KernelsMatchCpuReference) {
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
