// conv2d op (checks, CPU / CUDA dispatch, backward) and the Conv2d module.
#include "layers/conv2d.h"

#include <utility>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "kernels/conv2d.h"

namespace hg {
namespace {

std::string describe_call(const Tensor& x, const Tensor& w, const Tensor& b, int stride,
                          int padding, int groups) {
  return str("x ", x.describe(), ", weight ", w.describe(), ", bias ",
             b.defined() ? b.describe() : std::string("none"), ", stride ", stride, ", padding ",
             padding, ", groups ", groups);
}

// Parameters have x's dtype, or f32 for bf16 activations (mixed precision: f32 master weights,
// rounded to bf16 inside the kernels), on x's device.
void check_param(const char* op, const Tensor& x, const Tensor& p) {
  if (x.dtype() == DType::bf16) {
    check_dtype(op, p, DType::f32);
    HG_CHECK(p.device() == x.device(), op, ": parameter ", p.describe(), " is not on the device of x ",
             x.describe());
  } else {
    check_same_dtype_device(op, x, p);
  }
}

// The CPU reference of bf16 convolutions: the weight's values rounded to bf16, kept in f32.
Tensor cpu_weight_bf16(const Tensor& w) { return cpu_f32(round_bf16(w)); }

kernels::Conv2dShape check_conv2d(const Tensor& x, const Tensor& w, const Tensor& b, int stride,
                                  int padding, int groups) {
  const std::string call = describe_call(x, w, b, stride, padding, groups);
  HG_CHECK(x.defined() && w.defined(), "conv2d: x and weight must be defined");
  HG_CHECK(x.ndim() == 4, "conv2d: x must be (N, H, W, C) NHWC; got ", call);
  HG_CHECK(w.ndim() == 4, "conv2d: weight must be (O, C/groups, KH, KW); got ", call);
  HG_CHECK(stride >= 1 && padding >= 0 && groups >= 1,
           "conv2d: need stride >= 1, padding >= 0, groups >= 1; got ", call);
  check_param("conv2d", x, w);
  const int64_t C = x.size(3), O = w.size(0);
  HG_CHECK(C % groups == 0 && O % groups == 0, "conv2d: channels in (", C, ") and out (", O,
           ") must be divisible by groups; got ", call);
  HG_CHECK(w.size(1) == C / groups, "conv2d: weight.size(1) must be C/groups = ", C / groups,
           "; got ", call);
  if (b.defined()) {
    check_param("conv2d", x, b);
    HG_CHECK(b.ndim() == 1 && b.size(0) == O, "conv2d: bias must be (", O, "); got ", call);
  }
  HG_CHECK(x.size(1) + 2 * padding >= w.size(2) && x.size(2) + 2 * padding >= w.size(3),
           "conv2d: kernel larger than the padded input; got ", call);
  return kernels::make_conv2d_shape(x.size(0), x.size(1), x.size(2), C, O, w.size(2), w.size(3),
                                    stride, padding, groups);
}

Tensor forward_kernel(const kernels::Conv2dShape& s, const Tensor& x, const Tensor& w,
                      const Tensor& b) {
  if (cpu_bf16(x)) return round_bf16(forward_kernel(s, cpu_f32(x), cpu_weight_bf16(w), b));
  Tensor y = Tensor::empty({s.N, s.OH, s.OW, s.O}, x.dtype(), x.device());
  if (x.device() == Device::cuda) {
    HG_DISPATCH_CUDA(x.dtype(), "conv2d", [&] {
      kernels::cuda::conv2d_forward(s, x.data<scalar_t>(), w.data<float>(),
                                    b.defined() ? b.data<float>() : nullptr, y.data<scalar_t>());
    });
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), "conv2d", [&] {
      kernels::cpu::conv2d_forward<scalar_t>(s, x.data<scalar_t>(), w.data<scalar_t>(),
                                             b.defined() ? b.data<scalar_t>() : nullptr,
                                             y.data<scalar_t>());
    });
  }
  return y;
}

Tensor grad_input(const kernels::Conv2dShape& s, const Tensor& gy, const Tensor& w) {
  if (cpu_bf16(gy)) return round_bf16(grad_input(s, cpu_f32(gy), cpu_weight_bf16(w)));
  Tensor gx = Tensor::empty({s.N, s.H, s.W, s.C}, gy.dtype(), gy.device());
  if (gy.device() == Device::cuda) {
    HG_DISPATCH_CUDA(gy.dtype(), "conv2d backward", [&] {
      kernels::cuda::conv2d_backward_data(s, gy.data<scalar_t>(), w.data<float>(),
                                          gx.data<scalar_t>());
    });
  } else {
    HG_DISPATCH_FLOAT(gy.dtype(), "conv2d backward", [&] {
      kernels::cpu::conv2d_backward_data<scalar_t>(s, gy.data<scalar_t>(), w.data<scalar_t>(),
                                                   gx.data<scalar_t>());
    });
  }
  return gx;
}

// The weight gradient in the parameters' dtype (f32 for bf16 activations: never rounded).
Tensor grad_weight(const kernels::Conv2dShape& s, const Tensor& x, const Tensor& gy) {
  if (cpu_bf16(gy)) return grad_weight(s, cpu_f32(x), cpu_f32(gy));
  const DType pdt = gy.dtype() == DType::bf16 ? DType::f32 : gy.dtype();
  Tensor gw = Tensor::empty({s.O, s.Cg(), s.KH, s.KW}, pdt, gy.device());
  if (gy.device() == Device::cuda) {
    HG_DISPATCH_CUDA(gy.dtype(), "conv2d backward", [&] {
      kernels::cuda::conv2d_backward_weight(s, x.data<scalar_t>(), gy.data<scalar_t>(),
                                            gw.data<float>());
    });
  } else {
    HG_DISPATCH_FLOAT(gy.dtype(), "conv2d backward", [&] {
      kernels::cpu::conv2d_backward_weight<scalar_t>(s, x.data<scalar_t>(), gy.data<scalar_t>(),
                                                     gw.data<scalar_t>());
    });
  }
  return gw;
}

Tensor grad_bias(const kernels::Conv2dShape& s, const Tensor& gy) {
  if (cpu_bf16(gy)) return grad_bias(s, cpu_f32(gy));
  const DType pdt = gy.dtype() == DType::bf16 ? DType::f32 : gy.dtype();
  Tensor gb = Tensor::empty({s.O}, pdt, gy.device());
  if (gy.device() == Device::cuda) {
    HG_DISPATCH_CUDA(gy.dtype(), "conv2d backward", [&] {
      kernels::cuda::conv2d_backward_bias(s, gy.data<scalar_t>(), gb.data<float>());
    });
  } else {
    HG_DISPATCH_FLOAT(gy.dtype(), "conv2d backward", [&] {
      kernels::cpu::conv2d_backward_bias<scalar_t>(s, gy.data<scalar_t>(), gb.data<scalar_t>());
    });
  }
  return gb;
}

/// Both parameter gradients: {grad_weight, grad_bias}; on the GPU in one pass where the kernels
/// allow (kernels::cuda::conv2d_backward_weight_bias: the depthwise convs).
std::pair<Tensor, Tensor> grad_weight_bias(const kernels::Conv2dShape& s, const Tensor& x,
                                           const Tensor& gy) {
  if (gy.device() != Device::cuda) return {grad_weight(s, x, gy), grad_bias(s, gy)};
  Tensor gw = Tensor::empty({s.O, s.Cg(), s.KH, s.KW}, DType::f32, gy.device());
  Tensor gb = Tensor::empty({s.O}, DType::f32, gy.device());
  HG_DISPATCH_CUDA(gy.dtype(), "conv2d backward", [&] {
    kernels::cuda::conv2d_backward_weight_bias(s, x.data<scalar_t>(), gy.data<scalar_t>(),
                                               gw.data<float>(), gb.data<float>());
  });
  return {gw, gb};
}

}  // namespace

Tensor conv2d(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, int stride, int padding,
              int groups) {
  const kernels::Conv2dShape s = check_conv2d(x_in, w_in, b_in, stride, padding, groups);
  Tensor x = x_in.contiguous(), w = w_in.contiguous();
  Tensor b = b_in.defined() ? b_in.contiguous() : Tensor();
  Tensor y = forward_kernel(s, x, w, b);
  // Save only what backward will use: x for the weight gradient, the weight for the input one.
  Tensor saved_x = w_in.requires_grad() ? x : Tensor();
  Tensor saved_w = x_in.requires_grad() ? w : Tensor();
  autograd::record("conv2d", {x_in, w_in, b_in}, {y}, [s, saved_x, saved_w](autograd::Backward& g) {
    Tensor gy = g.grad_output(0).contiguous();
    Tensor gx = g.needs_grad(0) ? grad_input(s, gy, saved_w) : Tensor();
    if (g.needs_grad(1) && g.needs_grad(2)) {
      auto [gw, gb] = grad_weight_bias(s, saved_x, gy);
      return std::vector<Tensor>{gx, gw, gb};
    }
    return std::vector<Tensor>{gx, g.needs_grad(1) ? grad_weight(s, saved_x, gy) : Tensor(),
                               g.needs_grad(2) ? grad_bias(s, gy) : Tensor()};
  });
  return y;
}

Conv2d::Conv2d(const Conv2dOptions& opt, Generator& gen, DType dtype, Device device)
    : options(opt) {
  HG_CHECK(opt.in_channels > 0 && opt.out_channels > 0 && opt.kernel_size > 0 && opt.groups > 0 &&
               opt.in_channels % opt.groups == 0 && opt.out_channels % opt.groups == 0,
           "Conv2d: bad options in ", opt.in_channels, " out ", opt.out_channels, " kernel ",
           opt.kernel_size, " groups ", opt.groups);
  weight = make_parameter(
      {opt.out_channels, opt.in_channels / opt.groups, opt.kernel_size, opt.kernel_size}, dtype,
      device);
  trunc_normal_(weight, gen, 0.0, 0.02);  // timm ConvNeXt._init_weights
  if (opt.bias) bias = make_parameter({opt.out_channels}, dtype, device);  // zeros
}

Tensor Conv2d::forward(const Tensor& x) const {
  return conv2d(x, weight, bias, options.stride, options.padding, options.groups);
}

void Conv2d::collect(const std::string& prefix, std::vector<ParamRef>& out) const {
  out.push_back({prefix + "weight", weight, true, false});
  if (bias.defined()) out.push_back({prefix + "bias", bias, true, true});
}

}  // namespace hg
