// layer_scale and residual_add with autograd (see layer_scale.h).
#include "layers/layer_scale.h"

#include "core/autograd.h"
#include "core/ops.h"
#include "kernels/elementwise.h"
#include "kernels/layer_scale.h"

namespace hg {
namespace {
void run_forward(const Tensor& x, const Tensor& gamma, Tensor& y, int64_t rows, int64_t C) {
  if (x.device() == Device::cuda) {
#ifdef HAARGRAD_WITH_CUDA
    check_dtype("layer_scale", x, DType::f32);
    kernels::cuda::layer_scale_forward(x.data<float>(), gamma.data<float>(), y.data<float>(), rows,
                                       C);
#else
    throw Error("layer_scale: built without CUDA");
#endif
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), "layer_scale", [&] {
      kernels::cpu::layer_scale_forward(x.data<scalar_t>(), gamma.data<scalar_t>(),
                                        y.data<scalar_t>(), rows, C);
    });
  }
}

// dgamma[c] = sum_r dy[r, c] * x[r, c] (deterministic on both devices).
Tensor run_grad_gamma(const Tensor& x, const Tensor& dy, int64_t rows, int64_t C) {
  Tensor dgamma = Tensor::empty({C}, x.dtype(), x.device());
  if (x.device() == Device::cuda) {
#ifdef HAARGRAD_WITH_CUDA
    kernels::cuda::layer_scale_grad_gamma(x.data<float>(), dy.data<float>(), dgamma.data<float>(), rows, C);
#endif
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), "layer_scale backward", [&] {
      kernels::cpu::layer_scale_grad_gamma(x.data<scalar_t>(), dy.data<scalar_t>(), dgamma.data<scalar_t>(),
                                           rows, C);
    });
  }
  return dgamma;
}
}  // namespace

Tensor layer_scale(const Tensor& x_in, const Tensor& gamma_in) {
  HG_CHECK(x_in.ndim() >= 1, "layer_scale: input must have at least one dim, got ",
           x_in.describe());
  const int64_t C = x_in.size(-1);
  HG_CHECK(gamma_in.shape() == Shape{C}, "layer_scale: gamma must be [", C, "] for input ",
           x_in.describe(), ", got ", gamma_in.describe());
  check_same_dtype_device("layer_scale", x_in, gamma_in);
  const Tensor x = x_in.contiguous(), gamma = gamma_in.contiguous();
  const int64_t rows = C ? x.numel() / C : 0;
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  run_forward(x, gamma, y, rows, C);
  autograd::record(
      "layer_scale", {x_in, gamma_in}, {y}, [x, gamma, rows, C](autograd::Backward& g) {
        const Tensor dy = g.grad_output(0).contiguous();
        Tensor dx, dgamma;
        if (g.needs_grad(0)) {
          dx = Tensor::empty(x.shape(), x.dtype(), x.device());
          run_forward(dy, gamma, dx, rows, C);  // linear in x: dx = dy * gamma
        }
        if (g.needs_grad(1)) dgamma = run_grad_gamma(x, dy, rows, C);
        return std::vector<Tensor>{dx, dgamma};
      });
  return y;
}

Tensor residual_layer_scale(const Tensor& shortcut, const Tensor& h_in, const Tensor& gamma_in) {
  check_same_shape("residual_layer_scale", shortcut, h_in);
  check_same_dtype_device("residual_layer_scale", shortcut, h_in);
  const int64_t C = h_in.size(-1);
  HG_CHECK(gamma_in.shape() == Shape{C}, "residual_layer_scale: gamma must be [", C, "] for input ",
           h_in.describe(), ", got ", gamma_in.describe());
  check_same_dtype_device("residual_layer_scale", h_in, gamma_in);
  const Tensor h = h_in.contiguous(), gamma = gamma_in.contiguous(), x = shortcut.contiguous();
  const int64_t rows = C ? h.numel() / C : 0;
  Tensor y = Tensor::empty(h.shape(), h.dtype(), h.device());
  run_forward(h, gamma, y, rows, C);  // y = gamma * h ...
  if (y.device() == Device::cuda) {   // ... + shortcut, in place: the scaled branch never exists alone
#ifdef HAARGRAD_WITH_CUDA
    kernels::cuda::axpy(1.0f, x.data<float>(), y.data<float>(), y.numel());
#endif
  } else {
    HG_DISPATCH_FLOAT(y.dtype(), "residual_layer_scale", [&] {
      kernels::cpu::axpy(scalar_t(1), x.data<scalar_t>(), y.data<scalar_t>(), y.numel());
    });
  }
  // Saves h and gamma only (not the shortcut, which the backward never reads).
  autograd::record("residual_layer_scale", {shortcut, h_in, gamma_in}, {y}, [h, gamma, rows, C](autograd::Backward& g) {
    const Tensor dy = g.grad_output(0).contiguous();
    Tensor dh, dgamma;
    if (g.needs_grad(1)) {
      dh = Tensor::empty(h.shape(), h.dtype(), h.device());
      run_forward(dy, gamma, dh, rows, C);  // dh = dy * gamma
    }
    if (g.needs_grad(2)) dgamma = run_grad_gamma(h, dy, rows, C);
    return std::vector<Tensor>{g.needs_grad(0) ? dy : Tensor(), dh, dgamma};
  });
  return y;
}

Tensor residual_add(const Tensor& shortcut, const Tensor& branch) {
  check_same_shape("residual_add", shortcut, branch);
  check_same_dtype_device("residual_add", shortcut, branch);
  return ops::add(shortcut, branch);  // ops::add records the backward (dL/dy to both inputs)
}

}  // namespace hg
