// gelu with autograd (see activation.h); the backward recomputes erf from the saved input.
#include "layers/activation.h"

#include "core/autograd.h"
#include "kernels/gelu.h"

namespace hg {

Tensor gelu(const Tensor& x_in) {
  const Tensor x = x_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.device() == Device::cuda) {
#ifdef HAARGRAD_WITH_CUDA
    check_dtype("gelu", x, DType::f32);
    kernels::cuda::gelu_forward(x.data<float>(), y.data<float>(), x.numel());
#else
    throw Error("gelu: built without CUDA");
#endif
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), "gelu", [&] {
      kernels::cpu::gelu_forward(x.data<scalar_t>(), y.data<scalar_t>(), x.numel());
    });
  }
  autograd::record("gelu", {x_in}, {y}, [x](autograd::Backward& g) {
    const Tensor dy = g.grad_output(0).contiguous();
    Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
    if (x.device() == Device::cuda) {
#ifdef HAARGRAD_WITH_CUDA
      kernels::cuda::gelu_backward(x.data<float>(), dy.data<float>(), dx.data<float>(), x.numel());
#endif
    } else {
      HG_DISPATCH_FLOAT(x.dtype(), "gelu backward", [&] {
        kernels::cpu::gelu_backward(x.data<scalar_t>(), dy.data<scalar_t>(), dx.data<scalar_t>(),
                                    x.numel());
      });
    }
    return std::vector<Tensor>{dx};
  });
  return y;
}

}  // namespace hg
