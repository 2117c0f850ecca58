// CPU entry points of kernels/wtconv.h: check the arguments once (the shapes with the check the
// CUDA entry points share, kernels/wtconv_check.h), then run the reference or the fused
// implementation in the tensors' dtype; bf16 x (mixed precision) runs the f32 implementation on
// the widened input with the bf16 op's rounding points and rounds y / grad_x.
#include "kernels/cpu/wtconv_common.h"

#include <string>

#include "core/dispatch.h"
#include "kernels/wtconv_check.h"

namespace hg::kernels::cpu {
namespace wtconv_detail {

namespace {
/// The dtype of the parameters and of the reference mode's intermediates for x: x's, f32 for bf16
/// x (the f32 master weights of mixed precision; the f32 op on the widened input).
DType f32_for_bf16(const Tensor& x) { return x.dtype() == DType::bf16 ? DType::f32 : x.dtype(); }

/// The CPU part of the check (the shapes are wtconv_check_shapes'): every parameter has x's dtype
/// (f32 for bf16 x: the f32 master weights of mixed precision) and device.
void check_same(const char* op, const std::string& what, const Tensor& t, const Tensor& x) {
  const DType want = f32_for_bf16(x);
  HG_CHECK(t.dtype() == want && t.device() == x.device(), op, ": ", what, " is ", t.describe(),
           " but x is ", x.describe(), " (the parameters must be ", dtype_name(want),
           " on x's device)");
}
}  // namespace

Geometry check_args(const char* op, const Tensor& x, const WTConvWeights& w, int stride) {
  const int K = wtconv_check_shapes(op, x, w, stride);
  HG_CHECK(x.device() == Device::cpu, op, ": CPU kernel called with ", x.describe());
  HG_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::f64 || x.dtype() == DType::bf16, op,
           ": x must be f32, f64 or bf16, got ", x.describe());
  check_same(op, "base_weight", w.base_weight, x);
  check_same(op, "base_bias", w.base_bias, x);
  check_same(op, "base_scale", w.base_scale, x);
  for (int l = 0; l < w.levels(); ++l) {
    check_same(op, str("wavelet_weight[", l, "]"), w.wavelet_weight[l], x);
    check_same(op, str("wavelet_scale[", l, "]"), w.wavelet_scale[l], x);
  }
  Geometry g;
  g.B = x.size(0), g.H = x.size(1), g.W = x.size(2), g.C = x.size(3);
  g.K = K;
  g.L = w.levels();
  g.stride = stride;
  static_cast<WTConvLevels&>(g) = WTConvLevels(g.H, g.W, g.L);
  g.Ho = (g.H + stride - 1) / stride;
  g.Wo = (g.W + stride - 1) / stride;
  return g;
}

void check_grad_y(const char* op, const Geometry& g, const Tensor& x, const Tensor& grad_y) {
  wtconv_check_grad_y(op, x, grad_y, g.stride);
  HG_CHECK(grad_y.dtype() == x.dtype() && grad_y.device() == x.device(), op, ": grad_y is ",
           grad_y.describe(), " but x is ", x.describe());
}

DenseWeights::DenseWeights(const WTConvWeights& w)
    : base_weight(w.base_weight.contiguous()),
      base_bias(w.base_bias.contiguous()),
      base_scale(w.base_scale.contiguous()) {
  for (const Tensor& t : w.wavelet_weight) wavelet_weight.push_back(t.contiguous());
  for (const Tensor& t : w.wavelet_scale) wavelet_scale.push_back(t.contiguous());
}

WTConvGrads allocate_param_grads(const WTConvWeights& w) {
  WTConvGrads g;
  auto like = [](const Tensor& t) { return Tensor::empty(t.shape(), t.dtype(), t.device()); };
  g.base_weight = like(w.base_weight);
  g.base_bias = like(w.base_bias);
  g.base_scale = like(w.base_scale);
  for (const Tensor& t : w.wavelet_weight) g.wavelet_weight.push_back(like(t));
  for (const Tensor& t : w.wavelet_scale) g.wavelet_scale.push_back(like(t));
  return g;
}

}  // namespace wtconv_detail

Tensor wtconv_forward(const Tensor& x, const WTConvWeights& w, int stride, WTConvMode mode,
                      WTConvSaved* saved) {
  using namespace wtconv_detail;
  const char* op = "wtconv_forward";
  Geometry g = check_args(op, x, w, stride);
  wtconv_check_saved(op, x, g.L, mode, saved, /*filled=*/false, f32_for_bf16(x));
  if (x.dtype() == DType::bf16) {  // f32 math on the widened input (exact), y rounded once
    const Tensor xf = cpu_f32(x);  // core/dispatch.h: unrecorded copies
    return round_bf16(mode == WTConvMode::fused ? forward_fused<float>(xf, w, g, Planes::bf16)
                                                : forward_reference<float>(xf, w, g, saved));
  }
  Tensor xc = x.contiguous();
  return HG_DISPATCH_FLOAT(x.dtype(), op, [&] {
    return mode == WTConvMode::fused ? forward_fused<scalar_t>(xc, w, g, Planes::keep)
                                     : forward_reference<scalar_t>(xc, w, g, saved);
  });
}

WTConvGrads wtconv_backward(const Tensor& x, const WTConvWeights& w, const Tensor& grad_y,
                            int stride, bool need_grad_x, WTConvMode mode,
                            const WTConvSaved* saved) {
  using namespace wtconv_detail;
  const char* op = "wtconv_backward";
  Geometry g = check_args(op, x, w, stride);
  check_grad_y(op, g, x, grad_y);
  wtconv_check_saved(op, x, g.L, mode, saved, /*filled=*/true, f32_for_bf16(x));
  if (x.dtype() == DType::bf16) {  // f32 math on the widened x and grad_y; grad_x rounded once
    const Tensor xf = cpu_f32(x), gyf = cpu_f32(grad_y);
    WTConvGrads d = mode == WTConvMode::fused
                        ? backward_fused<float>(xf, w, gyf, g, need_grad_x, Planes::bf16)
                        : backward_reference<float>(xf, w, gyf, g, need_grad_x, saved);
    d.x = round_bf16(d.x);
    return d;
  }
  Tensor xc = x.contiguous(), gyc = grad_y.contiguous();
  return HG_DISPATCH_FLOAT(x.dtype(), op, [&] {
    return mode == WTConvMode::fused
               ? backward_fused<scalar_t>(xc, w, gyc, g, need_grad_x, Planes::keep)
               : backward_reference<scalar_t>(xc, w, gyc, g, need_grad_x, saved);
  });
}

}  // namespace hg::kernels::cpu
