// The CUDA kernels' bf16 instantiations called directly, into poisoned, guarded bf16 buffers
// (test::Guarded in bf16), against the CPU f32 kernels on the same (widened) values rounded once
// to bf16: GELU (forward, backward, both at once), layer scale (+ residual, dgamma), the per-sample
// scale of drop path, global average pooling, LayerNorm. The layer-level bf16 runs of every op are
// the op harness's device mode (registry_test.cpp); these catch a kernel that writes outside its
// output or leaves an element unwritten, at odd sizes and vector tails.
#include <gtest/gtest.h>

#include "gpu/gpu_util.h"
#include "harness.h"
#include "kernels/drop_path.h"
#include "kernels/gelu.h"
#include "kernels/layer_scale.h"
#include "kernels/layernorm.h"
#include "kernels/pool.h"
#include "test_util.h"

namespace hg {
namespace {

using test::Guarded;
using test::ops::kBf16DeviceTol;
using test::ops::kF32Tol;

/// bf16 values on the CPU (uniform in [lo, hi), rounded to bf16).
Tensor bf16_random(const Shape& s, uint64_t seed, double lo = -1, double hi = 1) {
  return test::random(s, seed, DType::f32, lo, hi).to(DType::bf16);
}
Tensor widen(const Tensor& t) { return t.to(DType::f32); }
bf16* ptr(Tensor& t) { return t.data<bf16>(); }
const bf16* cptr(const Tensor& t) { return t.data<bf16>(); }

/// The CUDA bf16 output against the CPU f32 result rounded once to bf16 (the CPU bf16 contract).
void expect_bf16_close(Guarded& got, const Tensor& want_f32, const std::string& what) {
  const double err = test::rel_error(got.tensor().to(Device::cpu), want_f32.to(DType::bf16));
  EXPECT_LT(err, kBf16DeviceTol.value) << what << " (" << kBf16DeviceTol.reason << ")";
  EXPECT_TRUE(got.guard_intact()) << what << ": a kernel wrote past its output";
}
void expect_f32_close(Guarded& got, const Tensor& want, const std::string& what) {
  EXPECT_LT(test::rel_error(got.tensor().to(Device::cpu), want), kF32Tol.value) << what;
  EXPECT_TRUE(got.guard_intact()) << what << ": a kernel wrote past its output";
}

TEST(GpuBf16Kernels, Gelu) {
  HG_REQUIRE_GPU();
  for (int64_t n : {1, 7, 255, 100003}) {  // tails of the 8-wide bf16 vectors
    const std::string what = str("n ", n);
    Tensor x = bf16_random({n}, 1 + n, -6, 6), dy = bf16_random({n}, 2 + n);
    Tensor xf = widen(x), dyf = widen(dy), y_ref = Tensor::empty({n}), dx_ref = Tensor::empty({n});
    kernels::cpu::gelu_forward(xf.data<float>(), y_ref.data<float>(), n);
    kernels::cpu::gelu_backward(xf.data<float>(), dyf.data<float>(), dx_ref.data<float>(), n);
    Tensor xg = x.to(Device::cuda), dyg = dy.to(Device::cuda);
    Guarded y({n}, DType::bf16), dx({n}, DType::bf16), y2({n}, DType::bf16), dx2({n}, DType::bf16);
    kernels::cuda::gelu_forward(cptr(xg), ptr(y.tensor()), n);
    kernels::cuda::gelu_backward(cptr(xg), cptr(dyg), ptr(dx.tensor()), n);
    kernels::cuda::gelu_forward_backward(cptr(xg), cptr(dyg), ptr(y2.tensor()), ptr(dx2.tensor()), n);
    cuda::synchronize();
    expect_bf16_close(y, y_ref, what + " forward");
    expect_bf16_close(dx, dx_ref, what + " backward");
    expect_bf16_close(y2, y_ref, what + " forward_backward y");
    expect_bf16_close(dx2, dx_ref, what + " forward_backward dx");
  }
}

TEST(GpuBf16Kernels, LayerScaleResidualAndGradGamma) {
  HG_REQUIRE_GPU();
  for (Shape s : {Shape{4, 28, 28, 96}, Shape{3, 5, 5, 33}, Shape{1, 1, 1, 5}}) {
    const int64_t C = s.back(), rows = shape_numel(s) / C;
    const std::string what = shape_str(s);
    Tensor x = bf16_random(s, 1 + C), sc = bf16_random(s, 2 + C), dy = bf16_random(s, 3 + C);
    Tensor gamma = test::random({C}, 4 + C, DType::f32);  // the f32 master, read as it is
    Tensor xf = widen(x), scf = widen(sc), dyf = widen(dy);
    Tensor y_ref = Tensor::empty(s), dg_ref = Tensor::empty({C});
    kernels::cpu::layer_scale_forward(xf.data<float>(), gamma.data<float>(), y_ref.data<float>(), rows, C);
    kernels::cpu::layer_scale_grad_gamma(xf.data<float>(), dyf.data<float>(), dg_ref.data<float>(), rows, C);
    Tensor res_ref = scf.clone();  // shortcut + x * gamma, in f32 then rounded once
    {
      std::vector<float> r = res_ref.to_vector<float>(), ys = y_ref.to_vector<float>();
      for (size_t i = 0; i < r.size(); ++i) r[i] += ys[i];
      res_ref = Tensor::from_vector<float>(s, r);
    }
    Tensor xg = x.to(Device::cuda), scg = sc.to(Device::cuda), dyg = dy.to(Device::cuda),
           gg = gamma.to(Device::cuda);
    Guarded y(s, DType::bf16), res(s, DType::bf16), dg({C}, DType::f32);
    kernels::cuda::layer_scale_forward(cptr(xg), gg.data<float>(), ptr(y.tensor()), rows, C);
    kernels::cuda::residual_layer_scale_forward(cptr(scg), cptr(xg), gg.data<float>(), ptr(res.tensor()),
                                                rows, C);
    kernels::cuda::layer_scale_grad_gamma(cptr(xg), cptr(dyg), dg.tensor().data<float>(), rows, C);
    cuda::synchronize();
    expect_bf16_close(y, y_ref, what + " layer_scale");
    expect_bf16_close(res, res_ref, what + " residual_layer_scale");
    expect_f32_close(dg, dg_ref, what + " dgamma (f32, from bf16 inputs)");
  }
}

TEST(GpuBf16Kernels, DropPathScaleRows) {
  HG_REQUIRE_GPU();
  for (Shape s : {Shape{8, 14, 14, 48}, Shape{3, 5}, Shape{1, 7}}) {
    const int64_t N = s[0], inner = shape_numel(s) / N;
    Tensor x = bf16_random(s, 1 + N), scale = test::random({N}, 2 + N, DType::f32, 0, 2);
    Tensor xf = widen(x), y_ref = Tensor::empty(s);
    kernels::cpu::scale_rows(xf.data<float>(), scale.data<float>(), y_ref.data<float>(), N, inner);
    Tensor xg = x.to(Device::cuda), sg = scale.to(Device::cuda);
    Guarded y(s, DType::bf16);
    kernels::cuda::scale_rows(cptr(xg), sg.data<float>(), ptr(y.tensor()), N, inner);
    cuda::synchronize();
    expect_bf16_close(y, y_ref, shape_str(s));
  }
}

TEST(GpuBf16Kernels, GlobalAvgPool) {
  HG_REQUIRE_GPU();
  for (Shape s : {Shape{2, 7, 7, 768}, Shape{3, 5, 3, 37}, Shape{2, 1, 1, 5}}) {
    const int64_t N = s[0], HW = s[1] * s[2], C = s[3];
    Tensor x = bf16_random(s, 1), gy = bf16_random({N, C}, 2);
    Tensor xf = widen(x), gyf = widen(gy), y_ref = Tensor::empty({N, C}), gx_ref = Tensor::empty(s);
    kernels::cpu::global_avg_pool_forward<float>(N, HW, C, xf.data<float>(), y_ref.data<float>());
    kernels::cpu::global_avg_pool_backward<float>(N, HW, C, gyf.data<float>(), gx_ref.data<float>());
    Tensor xg = x.to(Device::cuda), gyg = gy.to(Device::cuda);
    Guarded y({N, C}, DType::bf16), gx(s, DType::bf16);
    kernels::cuda::global_avg_pool_forward(N, HW, C, cptr(xg), ptr(y.tensor()));
    kernels::cuda::global_avg_pool_backward(N, HW, C, cptr(gyg), ptr(gx.tensor()));
    cuda::synchronize();
    expect_bf16_close(y, y_ref, shape_str(s) + " forward");
    expect_bf16_close(gx, gx_ref, shape_str(s) + " backward");
  }
}

TEST(GpuBf16Kernels, LayerNorm) {
  HG_REQUIRE_GPU();
  for (Shape s : {Shape{2, 7, 9, 96}, Shape{3, 5, 5, 33}, Shape{3, 1000}, Shape{1, 1, 1, 7}}) {
    const int64_t C = s.back(), rows = shape_numel(s) / C;
    const std::string what = shape_str(s);
    Tensor x = bf16_random(s, 1, -2, 3), dy = bf16_random(s, 2);
    Tensor w = test::random({C}, 3, DType::f32, 0.5, 1.5), b = test::random({C}, 4, DType::f32);
    Tensor xf = widen(x), dyf = widen(dy);
    Tensor y_ref = Tensor::empty(s), mean_ref = Tensor::empty({rows}), rstd_ref = Tensor::empty({rows});
    Tensor dx_ref = Tensor::empty(s), dw_ref = Tensor::empty({C}), db_ref = Tensor::empty({C});
    kernels::cpu::layernorm_forward(xf.data<float>(), w.data<float>(), b.data<float>(), y_ref.data<float>(),
                                    mean_ref.data<float>(), rstd_ref.data<float>(), rows, C, 1e-6);
    kernels::cpu::layernorm_backward(xf.data<float>(), w.data<float>(), mean_ref.data<float>(),
                                     rstd_ref.data<float>(), dyf.data<float>(), dx_ref.data<float>(),
                                     dw_ref.data<float>(), db_ref.data<float>(), rows, C);
    Tensor xg = x.to(Device::cuda), dyg = dy.to(Device::cuda), wg = w.to(Device::cuda),
           bg = b.to(Device::cuda);
    Guarded y(s, DType::bf16), mean({rows}), rstd({rows}), dx(s, DType::bf16), dw({C}), db({C});
    kernels::cuda::layernorm_forward(cptr(xg), wg.data<float>(), bg.data<float>(), ptr(y.tensor()),
                                     mean.tensor().data<float>(), rstd.tensor().data<float>(), rows, C,
                                     1e-6f);
    kernels::cuda::layernorm_backward(cptr(xg), wg.data<float>(), mean.tensor().data<float>(),
                                      rstd.tensor().data<float>(), cptr(dyg), ptr(dx.tensor()),
                                      dw.tensor().data<float>(), db.tensor().data<float>(), rows, C);
    cuda::synchronize();
    expect_bf16_close(y, y_ref, what + " y");
    expect_f32_close(mean, mean_ref, what + " mean");
    expect_f32_close(rstd, rstd_ref, what + " rstd");
    expect_bf16_close(dx, dx_ref, what + " dx");
    expect_f32_close(dw, dw_ref, what + " dweight");
    expect_f32_close(db, db_ref, what + " dbias");
  }
}

}  // namespace
}  // namespace hg
