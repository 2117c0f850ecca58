// CPU entry points of kernels/wtconv.h: check the arguments once, then run the reference or the
// fused implementation in the tensors' dtype.
#include "kernels/cpu/wtconv_common.h"

namespace hg::kernels::cpu {
namespace wtconv_detail {

namespace {
void check_param(const char* op, const char* what, const Tensor& t, const Shape& want,
                 const Tensor& x) {
  HG_CHECK(t.defined(), op, ": ", what, " is undefined (expected shape ", shape_str(want), ")");
  HG_CHECK(t.shape() == want, op, ": ", what, " must have shape ", shape_str(want), " for x ",
           shape_str(x.shape()), ", got ", shape_str(t.shape()));
  HG_CHECK(t.dtype() == x.dtype() && t.device() == x.device(), op, ": ", what, " is ", t.describe(),
           " but x is ", x.describe(), " (all tensors must share dtype and device)");
}
}  // namespace

Geometry check_args(const char* op, const Tensor& x, const WTConvWeights& w, int stride) {
  HG_CHECK(x.defined() && x.ndim() == 4, op, ": x must be NHWC (B, H, W, C), got ",
           x.defined() ? shape_str(x.shape()) : std::string("an undefined tensor"));
  HG_CHECK(x.device() == Device::cpu, op, ": CPU kernel called with ", x.describe());
  HG_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::f64, op, ": x must be f32 or f64, got ",
           x.describe());
  HG_CHECK(stride >= 1, op, ": stride must be >= 1, got ", stride);
  Geometry g;
  g.B = x.size(0), g.H = x.size(1), g.W = x.size(2), g.C = x.size(3);
  g.stride = stride;
  HG_CHECK(g.B >= 1 && g.H >= 1 && g.W >= 1 && g.C >= 1, op, ": empty input x ",
           shape_str(x.shape()));
  HG_CHECK(w.base_weight.defined() && w.base_weight.ndim() == 4, op,
           ": base_weight must be (C, 1, K, K)");
  g.K = static_cast<int>(w.base_weight.size(3));
  HG_CHECK(g.K >= 1 && g.K % 2 == 1, op, ": kernel size must be odd and >= 1, got ", g.K);
  const int64_t C = g.C, K = g.K;
  check_param(op, "base_weight", w.base_weight, {C, 1, K, K}, x);
  check_param(op, "base_bias", w.base_bias, {C}, x);
  check_param(op, "base_scale", w.base_scale, {1, C, 1, 1}, x);
  g.L = w.levels();
  HG_CHECK(g.L >= 1, op, ": needs at least one wavelet level, got ", g.L);
  HG_CHECK(w.wavelet_scale.size() == w.wavelet_weight.size(), op, ": ", w.wavelet_weight.size(),
           " wavelet weights but ", w.wavelet_scale.size(), " wavelet scales");
  for (int l = 0; l < g.L; ++l) {
    std::string ww = str("wavelet_weight[", l, "]"), ws = str("wavelet_scale[", l, "]");
    check_param(op, ww.c_str(), w.wavelet_weight[l], {4 * C, 1, K, K}, x);
    check_param(op, ws.c_str(), w.wavelet_scale[l], {1, 4 * C, 1, 1}, x);
  }
  g.h = {g.H};
  g.w = {g.W};
  for (int l = 0; l < g.L; ++l) {
    g.h.push_back((g.h.back() + 1) / 2);
    g.w.push_back((g.w.back() + 1) / 2);
  }
  g.Ho = (g.H + stride - 1) / stride;
  g.Wo = (g.W + stride - 1) / stride;
  return g;
}

void check_grad_y(const char* op, const Geometry& g, const Tensor& x, const Tensor& grad_y) {
  Shape want{g.B, g.Ho, g.Wo, g.C};
  HG_CHECK(grad_y.defined() && grad_y.shape() == want, op, ": grad_y must have shape ",
           shape_str(want), " (output of x ", shape_str(x.shape()), ", stride ", g.stride,
           "), got ", grad_y.defined() ? shape_str(grad_y.shape()) : std::string("undefined"));
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

Tensor wtconv_forward(const Tensor& x, const WTConvWeights& w, int stride, WTConvMode mode) {
  using namespace wtconv_detail;
  const char* op = "wtconv_forward";
  Geometry g = check_args(op, x, w, stride);
  Tensor xc = x.contiguous();
  return HG_DISPATCH_FLOAT(x.dtype(), op, [&] {
    return mode == WTConvMode::fused ? forward_fused<scalar_t>(xc, w, g)
                                     : forward_reference<scalar_t>(xc, w, g);
  });
}

WTConvGrads wtconv_backward(const Tensor& x, const WTConvWeights& w, const Tensor& grad_y,
                            int stride, bool need_grad_x, WTConvMode mode) {
  using namespace wtconv_detail;
  const char* op = "wtconv_backward";
  Geometry g = check_args(op, x, w, stride);
  check_grad_y(op, g, x, grad_y);
  Tensor xc = x.contiguous(), gyc = grad_y.contiguous();
  return HG_DISPATCH_FLOAT(x.dtype(), op, [&] {
    return mode == WTConvMode::fused ? backward_fused<scalar_t>(xc, w, gyc, g, need_grad_x)
                                     : backward_reference<scalar_t>(xc, w, gyc, g, need_grad_x);
  });
}

}  // namespace hg::kernels::cpu
