// gelu with autograd (see activation.h); the backward recomputes erf from the saved input.
#include "layers/activation.h"

#include "core/autograd.h"
#include "layers/dispatch.h"
#include "kernels/gelu.h"

namespace hg {
namespace {

Tensor gelu_kernel(const Tensor& x) {
  if (cpu_bf16(x)) return round_bf16(gelu_kernel(cpu_f32(x)));
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.device() == Device::cuda) {
    HG_DISPATCH_CUDA(x.dtype(), "gelu", [&] {
      kernels::cuda::gelu_forward(x.data<scalar_t>(), y.data<scalar_t>(), x.numel());
    });
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), "gelu", [&] {
      kernels::cpu::gelu_forward(x.data<scalar_t>(), y.data<scalar_t>(), x.numel());
    });
  }
  return y;
}

Tensor gelu_grad_kernel(const Tensor& x, const Tensor& dy) {
  if (cpu_bf16(x)) return round_bf16(gelu_grad_kernel(cpu_f32(x), cpu_f32(dy)));
  Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.device() == Device::cuda) {
    HG_DISPATCH_CUDA(x.dtype(), "gelu backward", [&] {
      kernels::cuda::gelu_backward(x.data<scalar_t>(), dy.data<scalar_t>(), dx.data<scalar_t>(),
                                   x.numel());
    });
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), "gelu backward", [&] {
      kernels::cpu::gelu_backward(x.data<scalar_t>(), dy.data<scalar_t>(), dx.data<scalar_t>(),
                                  x.numel());
    });
  }
  return dx;
}

}  // namespace

Tensor gelu(const Tensor& x_in) {
  const Tensor x = x_in.contiguous();
  Tensor y = gelu_kernel(x);
  autograd::record("gelu", {x_in}, {y}, [x](autograd::Backward& g) {
    return std::vector<Tensor>{gelu_grad_kernel(x, g.grad_output(0).contiguous())};
  });
  return y;
}

}  // namespace hg
