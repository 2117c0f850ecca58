// layer_scale and residual_add with autograd (see layer_scale.h).
#include "layers/layer_scale.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/ops.h"
#include "kernels/elementwise.h"
#include "kernels/layer_scale.h"

namespace hg {
namespace {

// y = x * gamma, or shortcut + x * gamma when `shortcut` is defined (one pass, one rounding).
// x may be bf16 with an f32 gamma (mixed precision: the parameter is read in f32, never cast).
void run_forward(const Tensor& x, const Tensor& gamma, const Tensor& shortcut, Tensor& y,
                 int64_t rows, int64_t C) {
  if (cpu_bf16(x)) {  // f32 math, y rounded to bf16 once
    Tensor y32 = Tensor::empty(x.shape(), DType::f32, x.device());
    run_forward(cpu_f32(x), gamma, cpu_f32(shortcut), y32, rows, C);
    y.copy_(y32);
    return;
  }
  if (x.device() == Device::cuda) {
    check_dtype("layer_scale", gamma, DType::f32);
    HG_DISPATCH_CUDA(x.dtype(), "layer_scale", [&] {
      if (shortcut.defined())
        kernels::cuda::residual_layer_scale_forward(shortcut.data<scalar_t>(), x.data<scalar_t>(),
                                                    gamma.data<float>(), y.data<scalar_t>(), rows, C);
      else
        kernels::cuda::layer_scale_forward(x.data<scalar_t>(), gamma.data<float>(),
                                           y.data<scalar_t>(), rows, C);
    });
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), "layer_scale", [&] {
      kernels::cpu::layer_scale_forward(x.data<scalar_t>(), gamma.data<scalar_t>(),
                                        y.data<scalar_t>(), rows, C);
      if (shortcut.defined())
        kernels::cpu::axpy(scalar_t(1), shortcut.data<scalar_t>(), y.data<scalar_t>(), y.numel());
    });
  }
}

// dgamma[c] = sum_r dy[r, c] * x[r, c] in gamma's dtype (deterministic on both devices).
Tensor run_grad_gamma(const Tensor& x, const Tensor& dy, DType gamma_dtype, int64_t rows,
                      int64_t C) {
  if (cpu_bf16(x)) return run_grad_gamma(cpu_f32(x), cpu_f32(dy), gamma_dtype, rows, C);
  Tensor dgamma = Tensor::empty({C}, gamma_dtype, x.device());
  if (x.device() == Device::cuda) {
    HG_DISPATCH_CUDA(x.dtype(), "layer_scale backward", [&] {
      kernels::cuda::layer_scale_grad_gamma(x.data<scalar_t>(), dy.data<scalar_t>(),
                                            dgamma.data<float>(), rows, C);
    });
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), "layer_scale backward", [&] {
      kernels::cpu::layer_scale_grad_gamma(x.data<scalar_t>(), dy.data<scalar_t>(),
                                           dgamma.data<scalar_t>(), rows, C);
    });
  }
  return dgamma;
}

// gamma must be [C] and, for bf16 activations, f32 (else x's dtype); same device as x.
void check_gamma(const char* op, const Tensor& x, const Tensor& gamma) {
  const int64_t C = x.size(-1);
  HG_CHECK(gamma.shape() == Shape{C}, op, ": gamma must be [", C, "] for input ", x.describe(),
           ", got ", gamma.describe());
  if (x.dtype() == DType::bf16) {
    check_dtype(op, gamma, DType::f32);
    HG_CHECK(gamma.device() == x.device(), op, ": gamma ", gamma.describe(),
             " is not on the device of ", x.describe());
  } else {
    check_same_dtype_device(op, x, gamma);
  }
}

}  // namespace

Tensor layer_scale(const Tensor& x_in, const Tensor& gamma_in) {
  HG_CHECK(x_in.ndim() >= 1, "layer_scale: input must have at least one dim, got ",
           x_in.describe());
  check_gamma("layer_scale", x_in, gamma_in);
  const int64_t C = x_in.size(-1);
  const Tensor x = x_in.contiguous(), gamma = gamma_in.contiguous();
  const int64_t rows = C ? x.numel() / C : 0;
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  run_forward(x, gamma, Tensor(), y, rows, C);
  autograd::record(
      "layer_scale", {x_in, gamma_in}, {y}, [x, gamma, rows, C](autograd::Backward& g) {
        const Tensor dy = g.grad_output(0).contiguous();
        Tensor dx, dgamma;
        if (g.needs_grad(0)) {
          dx = Tensor::empty(x.shape(), x.dtype(), x.device());
          run_forward(dy, gamma, Tensor(), dx, rows, C);  // linear in x: dx = dy * gamma
        }
        if (g.needs_grad(1)) dgamma = run_grad_gamma(x, dy, gamma.dtype(), rows, C);
        return std::vector<Tensor>{dx, dgamma};
      });
  return y;
}

Tensor residual_layer_scale(const Tensor& shortcut, const Tensor& h_in, const Tensor& gamma_in) {
  check_same_shape("residual_layer_scale", shortcut, h_in);
  check_same_dtype_device("residual_layer_scale", shortcut, h_in);
  check_gamma("residual_layer_scale", h_in, gamma_in);
  const int64_t C = h_in.size(-1);
  const Tensor h = h_in.contiguous(), gamma = gamma_in.contiguous(), x = shortcut.contiguous();
  const int64_t rows = C ? h.numel() / C : 0;
  Tensor y = Tensor::empty(h.shape(), h.dtype(), h.device());
  run_forward(h, gamma, x, y, rows, C);  // y = shortcut + gamma * h: the scaled branch never exists alone
  // Saves h and gamma only (not the shortcut, which the backward never reads).
  autograd::record("residual_layer_scale", {shortcut, h_in, gamma_in}, {y}, [h, gamma, rows, C](autograd::Backward& g) {
    const Tensor dy = g.grad_output(0).contiguous();
    Tensor dh, dgamma;
    if (g.needs_grad(1)) {
      dh = Tensor::empty(h.shape(), h.dtype(), h.device());
      run_forward(dy, gamma, Tensor(), dh, rows, C);  // dh = dy * gamma
    }
    if (g.needs_grad(2)) dgamma = run_grad_gamma(h, dy, gamma.dtype(), rows, C);
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
