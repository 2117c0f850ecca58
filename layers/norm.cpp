// layer_norm with autograd, and the LayerNorm module (see norm.h).
#include "layers/norm.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "kernels/layernorm.h"

namespace hg {

namespace {

// The forward kernels. x may be bf16 with f32 weight and bias (mixed precision: the parameters are
// read in f32, never cast); mean and rstd are f32 then (x's dtype otherwise).
void forward_kernel(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, Tensor& mean,
                    Tensor& rstd, int64_t rows, int64_t C, double eps) {
  if (cpu_bf16(x)) {  // f32 math, y rounded to bf16
    Tensor y32 = Tensor::empty(x.shape(), DType::f32, x.device());
    forward_kernel(cpu_f32(x), w, b, y32, mean, rstd, rows, C, eps);
    y.copy_(y32);
    return;
  }
  if (x.device() == Device::cuda) {
    check_dtype("layer_norm", w, DType::f32);
    HG_DISPATCH_CUDA(x.dtype(), "layer_norm", [&] {
      kernels::cuda::layernorm_forward(x.data<scalar_t>(), w.data<float>(), b.data<float>(),
                                       y.data<scalar_t>(), mean.data<float>(), rstd.data<float>(),
                                       rows, C, static_cast<float>(eps));
    });
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), "layer_norm", [&] {
      kernels::cpu::layernorm_forward(x.data<scalar_t>(), w.data<scalar_t>(), b.data<scalar_t>(),
                                      y.data<scalar_t>(), mean.data<scalar_t>(),
                                      rstd.data<scalar_t>(), rows, C, eps);
    });
  }
}

// dx (x's dtype), dw, db (the parameters' dtype); undefined ones are not computed.
void backward_kernel(const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
                     const Tensor& dy, Tensor& dx, Tensor& dw, Tensor& db, int64_t rows,
                     int64_t C) {
  if (cpu_bf16(x)) {  // f32 math, dx rounded to bf16
    Tensor dx32 = dx.defined() ? Tensor::empty(x.shape(), DType::f32, x.device()) : Tensor();
    backward_kernel(cpu_f32(x), w, mean, rstd, cpu_f32(dy), dx32, dw, db, rows, C);
    if (dx.defined()) dx.copy_(dx32);
    return;
  }
  if (x.device() == Device::cuda) {
    HG_DISPATCH_CUDA(x.dtype(), "layer_norm backward", [&] {
      auto ptr = [](const Tensor& t) { return t.defined() ? t.data<scalar_t>() : nullptr; };
      auto ptr32 = [](const Tensor& t) { return t.defined() ? t.data<float>() : nullptr; };
      kernels::cuda::layernorm_backward(x.data<scalar_t>(), w.data<float>(), mean.data<float>(),
                                        rstd.data<float>(), dy.data<scalar_t>(), ptr(dx), ptr32(dw),
                                        ptr32(db), rows, C);
    });
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), "layer_norm backward", [&] {
      auto ptr = [](const Tensor& t) { return t.defined() ? t.data<scalar_t>() : nullptr; };
      kernels::cpu::layernorm_backward(x.data<scalar_t>(), w.data<scalar_t>(),
                                       mean.data<scalar_t>(), rstd.data<scalar_t>(),
                                       dy.data<scalar_t>(), ptr(dx), ptr(dw), ptr(db), rows, C);
    });
  }
}

}  // namespace

Tensor layer_norm(const Tensor& x_in, const Tensor& weight, const Tensor& bias, double eps) {
  HG_CHECK(x_in.ndim() >= 1, "layer_norm: input must have at least one dim, got ", x_in.describe());
  const int64_t C = x_in.size(-1);
  HG_CHECK(weight.shape() == Shape{C} && bias.shape() == Shape{C}, "layer_norm: weight ",
           weight.describe(), " and bias ", bias.describe(), " must be [", C, "] for input ",
           x_in.describe());
  if (x_in.dtype() == DType::bf16) {  // mixed precision: f32 parameters, read as they are
    check_dtype("layer_norm (bf16 input)", weight, DType::f32);
    check_same_dtype_device("layer_norm", weight, bias);
    HG_CHECK(weight.device() == x_in.device(), "layer_norm: weight ", weight.describe(),
             " is not on the device of x ", x_in.describe());
  } else {
    check_same_dtype_device("layer_norm", x_in, weight);
    check_same_dtype_device("layer_norm", x_in, bias);
  }
  HG_CHECK(eps > 0, "layer_norm: eps must be > 0, got ", eps);
  const Tensor x = x_in.contiguous(), w = weight.contiguous(), b = bias.contiguous();
  const int64_t rows = C ? x.numel() / C : 0;
  const DType stat = x.dtype() == DType::bf16 ? DType::f32 : x.dtype();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor mean = Tensor::empty({rows}, stat, x.device());
  Tensor rstd = Tensor::empty({rows}, stat, x.device());
  forward_kernel(x, w, b, y, mean, rstd, rows, C, eps);
  autograd::record(
      "layer_norm", {x_in, weight, bias}, {y}, [x, w, mean, rstd, rows, C](autograd::Backward& g) {
        const Tensor dy = g.grad_output(0).contiguous();
        Tensor dx, dw, db;
        if (g.needs_grad(0)) dx = Tensor::empty(x.shape(), x.dtype(), x.device());
        if (g.needs_grad(1)) dw = Tensor::empty({C}, w.dtype(), x.device());
        if (g.needs_grad(2)) db = Tensor::empty({C}, w.dtype(), x.device());
        backward_kernel(x, w, mean, rstd, dy, dx, dw, db, rows, C);
        return std::vector<Tensor>{dx, dw, db};
      });
  return y;
}

LayerNorm::LayerNorm(int64_t channels, double eps_, DType dtype, Device device)
    : weight(make_parameter({channels}, dtype, device)),
      bias(make_parameter({channels}, dtype, device)),
      eps(eps_) {
  HG_CHECK(channels > 0, "LayerNorm: channels must be > 0, got ", channels);
  weight.fill_(1.0);  // bias stays zero (make_parameter zero-fills)
}

void LayerNorm::collect(const std::string& prefix, std::vector<ParamRef>& out) const {
  out.push_back({prefix + "weight", weight, true, true});
  out.push_back({prefix + "bias", bias, true, true});
}

}  // namespace hg
