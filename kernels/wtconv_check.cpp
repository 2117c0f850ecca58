// The shape check shared by the CPU and CUDA WTConv2d entry points (see wtconv_check.h).
#include "kernels/wtconv_check.h"

#include <string>

namespace hg::kernels {
namespace {

std::string shape_of(const Tensor& t) {
  return t.defined() ? shape_str(t.shape()) : std::string("undefined");
}

/// t must have shape `want`; `form` is the same shape in letters, e.g. "(4C, 1, K, K)".
void check_param(const char* op, const std::string& what, const Tensor& t, const Shape& want,
                 const char* form, const Tensor& x) {
  HG_CHECK(t.defined() && t.shape() == want, op, ": ", what, " must have shape ", shape_str(want),
           " ", form, " for x ", shape_str(x.shape()), ", got ", shape_of(t));
}

}  // namespace

int wtconv_check_shapes(const char* op, const Tensor& x, const WTConvWeights& w, int stride) {
  HG_CHECK(x.defined() && x.ndim() == 4, op, ": x must be NHWC (B, H, W, C), got ", shape_of(x));
  HG_CHECK(x.size(0) >= 1 && x.size(1) >= 1 && x.size(2) >= 1 && x.size(3) >= 1, op, ": x ",
           shape_str(x.shape()), " is empty (B, H, W and C must be >= 1)");
  HG_CHECK(stride >= 1, op, ": stride must be >= 1, got ", stride);
  const int64_t C = x.size(3);
  const Tensor& bw = w.base_weight;
  HG_CHECK(bw.defined() && bw.ndim() == 4 && bw.size(0) == C && bw.size(1) == 1 &&
               bw.size(2) == bw.size(3),
           op, ": base_weight must have shape (C, 1, K, K) with C = ", C, " for x ",
           shape_str(x.shape()), ", got ", shape_of(bw));
  const int64_t K = bw.size(3);
  HG_CHECK(K >= 1 && K % 2 == 1, op, ": base_weight ", shape_str(bw.shape()),
           " has kernel size K = ", K, "; K must be odd (1, 3, 5, ...)");
  check_param(op, "base_bias", w.base_bias, {C}, "(C)", x);
  check_param(op, "base_scale", w.base_scale, {1, C, 1, 1}, "(1, C, 1, 1)", x);
  HG_CHECK(!w.wavelet_weight.empty(), op,
           ": needs at least one wavelet level, got no wavelet_weight tensors");
  HG_CHECK(w.wavelet_scale.size() == w.wavelet_weight.size(), op, ": ", w.wavelet_weight.size(),
           " wavelet_weight tensors but ", w.wavelet_scale.size(),
           " wavelet_scale tensors (one of each per level)");
  for (size_t l = 0; l < w.wavelet_weight.size(); ++l) {
    check_param(op, str("wavelet_weight[", l, "]"), w.wavelet_weight[l], {4 * C, 1, K, K},
                "(4C, 1, K, K)", x);
    check_param(op, str("wavelet_scale[", l, "]"), w.wavelet_scale[l], {1, 4 * C, 1, 1},
                "(1, 4C, 1, 1)", x);
  }
  return static_cast<int>(K);
}

void wtconv_check_grad_y(const char* op, const Tensor& x, const Tensor& grad_y, int stride) {
  HG_CHECK(stride >= 1, op, ": stride must be >= 1, got ", stride);
  const Shape want{x.size(0), (x.size(1) + stride - 1) / stride, (x.size(2) + stride - 1) / stride,
                   x.size(3)};
  HG_CHECK(grad_y.defined() && grad_y.shape() == want, op, ": grad_y must have shape ",
           shape_str(want), " (the output of x ", shape_str(x.shape()), " at stride ", stride,
           "), got ", shape_of(grad_y));
}

void wtconv_check_saved(const char* op, const Tensor& x, int levels, WTConvMode mode,
                        const WTConvSaved* saved, bool filled, DType dtype) {
  if (saved == nullptr) return;
  HG_CHECK(mode == WTConvMode::reference, op,
           ": saved intermediates are the reference mode's (the fused mode keeps none)");
  if (!filled) return;
  HG_CHECK(saved->defined(), op, ": the saved intermediates are empty (no forward filled them)");
  const int64_t B = x.size(0), C = x.size(3);
  auto check = [&](const std::string& what, const Tensor& t, const Shape& want) {
    HG_CHECK(t.defined() && t.shape() == want && t.dtype() == dtype && t.device() == x.device() &&
                 t.is_contiguous(),
             op, ": saved ", what, " must be a dense ", shape_str(want), " ", dtype_name(dtype),
             " tensor on ", device_name(x.device()), " for x ", shape_str(x.shape()), ", got ",
             t.defined() ? t.describe() : std::string("undefined"));
  };
  check("base", saved->base, {B, x.size(1), x.size(2), C});
  const auto count = [&](const char* what, const std::vector<Tensor>& v) {
    HG_CHECK(int(v.size()) == levels, op, ": saved ", what, " has ", v.size(),
             " tensors (one a level), the weights have ", levels, " levels");
  };
  count("coeff", saved->coeff);
  count("conv", saved->conv);
  count("synth_in", saved->synth_in);
  const WTConvLevels grid(x.size(1), x.size(2), levels);
  for (int l = 0; l < levels; ++l) {
    const Shape level{B, grid.h[size_t(l) + 1], grid.w[size_t(l) + 1], 4 * C};
    check(str("coeff[", l, "]"), saved->coeff[size_t(l)], level);
    check(str("conv[", l, "]"), saved->conv[size_t(l)], level);
    check(str("synth_in[", l, "]"), saved->synth_in[size_t(l)], level);
  }
}

int64_t WTConvSaved::nbytes() const {
  int64_t n = base.defined() ? int64_t(base.nbytes()) : 0;
  for (const auto* v : {&coeff, &conv, &synth_in})
    for (const Tensor& t : *v) n += int64_t(t.nbytes());
  return n;
}

}  // namespace hg::kernels
