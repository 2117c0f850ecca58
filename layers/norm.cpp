// layer_norm with autograd, and the LayerNorm module (see norm.h).
#include "layers/norm.h"

#include "core/autograd.h"
#include "kernels/layernorm.h"

namespace hg {

Tensor layer_norm(const Tensor& x_in, const Tensor& weight, const Tensor& bias, double eps) {
  HG_CHECK(x_in.ndim() >= 1, "layer_norm: input must have at least one dim, got ", x_in.describe());
  const int64_t C = x_in.size(-1);
  HG_CHECK(weight.shape() == Shape{C} && bias.shape() == Shape{C}, "layer_norm: weight ",
           weight.describe(), " and bias ", bias.describe(), " must be [", C, "] for input ",
           x_in.describe());
  check_same_dtype_device("layer_norm", x_in, weight);
  check_same_dtype_device("layer_norm", x_in, bias);
  HG_CHECK(eps > 0, "layer_norm: eps must be > 0, got ", eps);
  const Tensor x = x_in.contiguous(), w = weight.contiguous(), b = bias.contiguous();
  const int64_t rows = C ? x.numel() / C : 0;
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor mean = Tensor::empty({rows}, x.dtype(), x.device());
  Tensor rstd = Tensor::empty({rows}, x.dtype(), x.device());
  if (x.device() == Device::cuda) {
#ifdef HAARGRAD_WITH_CUDA
    check_dtype("layer_norm", x, DType::f32);
    kernels::cuda::layernorm_forward(x.data<float>(), w.data<float>(), b.data<float>(),
                                     y.data<float>(), mean.data<float>(), rstd.data<float>(), rows,
                                     C, static_cast<float>(eps));
#else
    throw Error("layer_norm: built without CUDA");
#endif
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), "layer_norm", [&] {
      kernels::cpu::layernorm_forward(x.data<scalar_t>(), w.data<scalar_t>(), b.data<scalar_t>(),
                                      y.data<scalar_t>(), mean.data<scalar_t>(),
                                      rstd.data<scalar_t>(), rows, C, eps);
    });
  }
  autograd::record(
      "layer_norm", {x_in, weight, bias}, {y}, [x, w, mean, rstd, rows, C](autograd::Backward& g) {
        const Tensor dy = g.grad_output(0).contiguous();
        Tensor dx, dw, db;
        if (g.needs_grad(0)) dx = Tensor::empty(x.shape(), x.dtype(), x.device());
        if (g.needs_grad(1)) dw = Tensor::empty({C}, x.dtype(), x.device());
        if (g.needs_grad(2)) db = Tensor::empty({C}, x.dtype(), x.device());
        if (x.device() == Device::cuda) {
#ifdef HAARGRAD_WITH_CUDA
          auto ptr = [](const Tensor& t) { return t.defined() ? t.data<float>() : nullptr; };
          kernels::cuda::layernorm_backward(x.data<float>(), w.data<float>(), mean.data<float>(),
                                            rstd.data<float>(), dy.data<float>(), ptr(dx), ptr(dw),
                                            ptr(db), rows, C);
#endif
        } else {
          HG_DISPATCH_FLOAT(x.dtype(), "layer_norm backward", [&] {
            auto ptr = [](const Tensor& t) { return t.defined() ? t.data<scalar_t>() : nullptr; };
            kernels::cpu::layernorm_backward(
                x.data<scalar_t>(), w.data<scalar_t>(), mean.data<scalar_t>(),
                rstd.data<scalar_t>(), dy.data<scalar_t>(), ptr(dx), ptr(dw), ptr(db), rows, C);
          });
        }
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
