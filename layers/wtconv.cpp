// WTConv2d layer and the wtconv2d functional op (see wtconv.h).
#include "layers/wtconv.h"

#include <cmath>
#include <memory>

#include "core/autograd.h"
#include "core/memory.h"

namespace hg {

namespace {

/// The mixed-precision contract of the kernels: bf16 activations (x, grad_y) with f32 parameters.
void check_dtypes(const char* op, const Tensor& x, const kernels::WTConvWeights& w) {
  if (x.dtype() != DType::bf16) return;  // f32 / f64: the kernels check that everything matches
  auto f32 = [&](const Tensor& t, const std::string& what) {
    HG_CHECK(t.defined() && t.dtype() == DType::f32, op, ": x is ", x.describe(), " so ", what,
             " must be f32 (the master parameters; WTConv reads them in f32 and returns f32 "
             "gradients), got ", t.defined() ? t.describe() : std::string("undefined"));
  };
  f32(w.base_weight, "base_weight");
  f32(w.base_bias, "base_bias");
  f32(w.base_scale, "base_scale");
  for (size_t l = 0; l < w.wavelet_weight.size(); ++l)
    f32(w.wavelet_weight[l], str("wavelet_weight[", l, "]"));
  for (size_t l = 0; l < w.wavelet_scale.size(); ++l)
    f32(w.wavelet_scale[l], str("wavelet_scale[", l, "]"));
}

}  // namespace

Tensor wtconv2d_run_forward(const Tensor& x, const kernels::WTConvWeights& w, int stride,
                            WTConvMode mode, kernels::WTConvSaved* saved) {
  check_dtypes("wtconv2d", x, w);
  // bf16 on the CPU: the kernels' bf16 op (kernels/wtconv.h: f32 math, bf16 storage at the same
  // points as the CUDA kernels)
  if (x.device() == Device::cpu) return kernels::cpu::wtconv_forward(x, w, stride, mode, saved);
  return kernels::cuda::wtconv_forward(x, w, stride, mode, Tensor(), saved);
}

kernels::WTConvGrads wtconv2d_run_backward(const Tensor& x, const kernels::WTConvWeights& w,
                                           const Tensor& grad_y, int stride, bool need_grad_x,
                                           WTConvMode mode, const kernels::WTConvSaved* saved) {
  check_dtypes("wtconv2d backward", x, w);
  HG_CHECK(grad_y.defined() && grad_y.dtype() == x.dtype(), "wtconv2d backward: grad_y ",
           grad_y.defined() ? grad_y.describe() : std::string("undefined"),
           " must have the dtype of x ", x.describe());
  if (x.device() == Device::cpu)
    return kernels::cpu::wtconv_backward(x, w, grad_y, stride, need_grad_x, mode, saved);
  return kernels::cuda::wtconv_backward(x, w, grad_y, stride, need_grad_x, mode, Tensor(), saved);
}

Tensor wtconv2d(const Tensor& x, const kernels::WTConvWeights& w, int stride, WTConvMode mode) {
  HG_CHECK(x.defined() && x.ndim() == 4, "wtconv2d: x must be NHWC (B, H, W, C), got ",
           x.defined() ? shape_str(x.shape()) : std::string("an undefined tensor"));
  HG_CHECK(w.base_weight.defined(), "wtconv2d: base_weight is undefined");
  // The kernels always take a bias; "no bias" is a zero bias (in the parameters' dtype) that
  // receives no gradient.
  kernels::WTConvWeights kw = w;
  if (!kw.base_bias.defined())
    kw.base_bias = Tensor::zeros({w.base_weight.size(0)}, w.base_weight.dtype(), x.device());

  // Inputs: x, base weight, bias, scale, then per level its weight and scale.
  std::vector<Tensor> inputs{x, kw.base_weight, kw.base_bias, kw.base_scale};
  for (int l = 0; l < kw.levels(); ++l) {
    inputs.push_back(kw.wavelet_weight[l]);
    inputs.push_back(kw.wavelet_scale.at(l));
  }
  // The reference mode keeps what PyTorch's autograd keeps of the reference module, so that its
  // memory is the paper's baseline (the fused mode keeps x alone and recomputes), when there will
  // be a backward (autograd::record records this call exactly then).
  std::shared_ptr<kernels::WTConvSaved> saved;
  if (mode == WTConvMode::reference && autograd::any_requires_grad(inputs))
    saved = std::make_shared<kernels::WTConvSaved>();
  Tensor y = wtconv2d_run_forward(x, kw, stride, mode, saved.get());
  autograd::record("wtconv2d", inputs, {y}, [x, kw, stride, mode, saved](autograd::Backward& g) {
    const kernels::WTConvGrads d =
        wtconv2d_run_backward(x, kw, g.grad_output(0), stride, g.needs_grad(0), mode, saved.get());
    auto pick = [&g](int i, const Tensor& t) { return g.needs_grad(i) ? t : Tensor(); };
    std::vector<Tensor> out{pick(0, d.x), pick(1, d.base_weight), pick(2, d.base_bias),
                            pick(3, d.base_scale)};
    for (int l = 0; l < kw.levels(); ++l) {
      out.push_back(pick(4 + 2 * l, d.wavelet_weight.at(l)));
      out.push_back(pick(5 + 2 * l, d.wavelet_scale.at(l)));
    }
    return out;
  });
  return y;
}

Tensor haar_filter(int64_t channels, DType dtype, Device device) {
  // [s][a, b, c, d] with a, b the top row: see the header and docs/wtconv-operator.md.
  static const double kSigns[4][4] = {{1, 1, 1, 1}, {1, 1, -1, -1}, {1, -1, 1, -1}, {1, -1, -1, 1}};
  std::vector<double> v;
  v.reserve(static_cast<size_t>(16 * channels));
  for (int64_t c = 0; c < channels; ++c)
    for (int s = 0; s < 4; ++s)
      for (int k = 0; k < 4; ++k) v.push_back(0.5 * kSigns[s][k]);
  return Tensor::from_vector({4 * channels, 1, 2, 2}, v).to(dtype).to(device);
}

WTConv2d::WTConv2d(int64_t in_channels, int64_t out_channels, const WTConv2dOptions& opt,
                   Generator& gen)
    : channels_(in_channels), kernel_size_(opt.kernel_size), stride_(opt.stride) {
  HG_CHECK(in_channels == out_channels, "WTConv2d: in_channels (", in_channels,
           ") must equal out_channels (", out_channels, ")");
  HG_CHECK(in_channels >= 1, "WTConv2d: channels must be >= 1, got ", in_channels);
  HG_CHECK(opt.kernel_size >= 1 && opt.kernel_size % 2 == 1,
           "WTConv2d: kernel_size must be odd and >= 1, got ", opt.kernel_size);
  HG_CHECK(opt.wt_levels >= 1, "WTConv2d: wt_levels must be >= 1, got ", opt.wt_levels);
  HG_CHECK(opt.stride >= 1, "WTConv2d: stride must be >= 1, got ", opt.stride);
  HG_CHECK(opt.wavelet == "db1" || opt.wavelet == "haar", "WTConv2d: wavelet '", opt.wavelet,
           "' is not supported (only Haar: \"db1\" or \"haar\")");
  HG_CHECK(opt.dtype == DType::f32 || opt.dtype == DType::f64,
           "WTConv2d: parameters must be f32 or f64, got ", dtype_name(opt.dtype));

  const int64_t C = in_channels, K = opt.kernel_size;
  {
    memory::CategoryScope scope(Category::parameters);
    wt_filter = haar_filter(C, opt.dtype, opt.device);
    iwt_filter = haar_filter(C, opt.dtype, opt.device);
    if (opt.stride > 1) stride_filter = Tensor::full({C, 1, 1, 1}, 1.0, opt.dtype, opt.device);
  }
  base_weight = make_parameter({C, 1, K, K}, opt.dtype, opt.device);
  trunc_normal_(base_weight, gen, 0.0, 0.02);
  if (opt.bias) base_bias = make_parameter({C}, opt.dtype, opt.device);  // zeros
  base_scale = make_parameter({1, C, 1, 1}, opt.dtype, opt.device);
  base_scale.fill_(1.0);
  for (int l = 0; l < opt.wt_levels; ++l) {
    wavelet_weight.push_back(make_parameter({4 * C, 1, K, K}, opt.dtype, opt.device));
    trunc_normal_(wavelet_weight.back(), gen, 0.0, 0.02);
  }
  for (int l = 0; l < opt.wt_levels; ++l) {
    wavelet_scale.push_back(make_parameter({1, 4 * C, 1, 1}, opt.dtype, opt.device));
    wavelet_scale.back().fill_(0.1);
  }
}

kernels::WTConvWeights WTConv2d::weights() const {
  return {base_weight, base_bias, base_scale, wavelet_weight, wavelet_scale};
}

Tensor WTConv2d::forward(const Tensor& x) {
  HG_CHECK(x.defined() && x.ndim() == 4, "WTConv2d '", name, "': x must be NHWC (B, H, W, C), got ",
           x.defined() ? shape_str(x.shape()) : std::string("an undefined tensor"));
  HG_CHECK(x.size(3) == channels_, "WTConv2d '", name, "': input has ", x.size(3), " channels (x ",
           shape_str(x.shape()), ") but the layer has ", channels_);
  return wtconv2d(x, weights(), stride_, mode_);
}

void WTConv2d::collect(const std::string& prefix, std::vector<ParamRef>& out) const {
  out.push_back({prefix + "wt_filter", wt_filter, false, true});
  out.push_back({prefix + "iwt_filter", iwt_filter, false, true});
  out.push_back({prefix + "base_conv.weight", base_weight, true, false});
  if (base_bias.defined()) out.push_back({prefix + "base_conv.bias", base_bias, true, true});
  out.push_back({prefix + "base_scale.weight", base_scale, true, true});
  for (size_t l = 0; l < wavelet_weight.size(); ++l)
    out.push_back({str(prefix, "wavelet_convs.", l, ".weight"), wavelet_weight[l], true, false});
  for (size_t l = 0; l < wavelet_scale.size(); ++l)
    out.push_back({str(prefix, "wavelet_scale.", l, ".weight"), wavelet_scale[l], true, true});
  if (stride_filter.defined())
    out.push_back({prefix + "stride_filter", stride_filter, false, true});
}

void WTConv2d::load_fixed_filters(const Tensor& wt, const Tensor& iwt) {
  const Tensor want = haar_filter(channels_, DType::f64);
  for (auto [what, t] : {std::pair<const char*, const Tensor*>{"wt_filter", &wt},
                         std::pair<const char*, const Tensor*>{"iwt_filter", &iwt}}) {
    HG_CHECK(t->defined() && t->shape() == want.shape(), "WTConv2d '", name, "': ", what,
             " must have shape ", shape_str(want.shape()), ", got ",
             t->defined() ? shape_str(t->shape()) : std::string("undefined"));
    std::vector<double> got = t->to_vector<double>(), ref = want.to_vector<double>();
    for (size_t k = 0; k < got.size(); ++k)
      HG_CHECK(std::fabs(got[k] - ref[k]) <= 1e-6, "WTConv2d '", name, "': ", what,
               " is not the Haar filter: element ", k, " (filter ", k / 4, ", tap ", k % 4, ") is ",
               got[k], ", expected ", ref[k]);
  }
  wt_filter.copy_(wt);
  iwt_filter.copy_(iwt);
}

}  // namespace hg
