// drop_path / scale_samples with autograd (see drop_path.h). The per-sample mask is drawn on the
// host (N numbers per call) so a seeded Generator reproduces it on any device.
#include "layers/drop_path.h"

#include <vector>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/host_drawn.h"
#include "kernels/drop_path.h"

namespace hg {
namespace {
// Per sample: y = x * scale[n] (z undefined), or y = x + z * scale[n] (the residual add of a
// scaled branch); scale is f32 when x is bf16 (else x's dtype). `op` names the caller.
void run_rows(const char* op, const Tensor& x, const Tensor& z, const Tensor& scale, Tensor& y) {
  if (cpu_bf16(x)) {  // f32 math, rounded to bf16 once
    Tensor y32 = Tensor::empty(x.shape(), DType::f32, x.device());
    run_rows(op, cpu_f32(x), z.defined() ? cpu_f32(z) : Tensor(), scale, y32);
    y.copy_(y32);
    return;
  }
  const int64_t N = x.size(0), inner = N ? x.numel() / N : 0;
  if (x.device() == Device::cuda) {
    HG_DISPATCH_CUDA(x.dtype(), op, [&] {
      if (z.defined())
        kernels::cuda::add_scaled_rows(x.data<scalar_t>(), z.data<scalar_t>(), scale.data<float>(),
                                       y.data<scalar_t>(), N, inner);
      else
        kernels::cuda::scale_rows(x.data<scalar_t>(), scale.data<float>(), y.data<scalar_t>(), N,
                                  inner);
    });
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), op, [&] {
      if (z.defined())
        kernels::cpu::add_scaled_rows(x.data<scalar_t>(), z.data<scalar_t>(),
                                      scale.data<scalar_t>(), y.data<scalar_t>(), N, inner);
      else
        kernels::cpu::scale_rows(x.data<scalar_t>(), scale.data<scalar_t>(), y.data<scalar_t>(), N,
                                 inner);
    });
  }
}

void check_drop_prob(double drop_prob) {
  HG_CHECK(drop_prob >= 0.0 && drop_prob <= 1.0, "drop_path: drop_prob must be in [0, 1], got ",
           drop_prob);
}

/// The dtype of a per-sample scale for activations of dtype t (f32 for bf16 activations).
DType scale_dtype(DType t) { return t == DType::bf16 ? DType::f32 : t; }

/// Checks a per-sample scale for x (op: the caller's name, for the message).
void check_scale(const char* op, const Tensor& x, const Tensor& scale) {
  HG_CHECK(x.ndim() >= 1, op, ": input must have a batch dim, got ", x.describe());
  HG_CHECK(scale.shape() == Shape{x.size(0)}, op, ": scale must be [", x.size(0), "] for input ",
           x.describe(), ", got ", scale.describe());
  HG_CHECK(scale.dtype() == scale_dtype(x.dtype()) && scale.device() == x.device(), op,
           ": scale must be ", dtype_name(scale_dtype(x.dtype())), " on the device of ",
           x.describe(), ", got ", scale.describe());
}
}  // namespace

Tensor scale_samples(const Tensor& x_in, const Tensor& scale_in) {
  check_scale("scale_samples", x_in, scale_in);
  const Tensor x = x_in.contiguous(), scale = scale_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  run_rows("scale_samples", x, Tensor(), scale, y);
  autograd::record("scale_samples", {x_in}, {y}, [scale](autograd::Backward& g) {
    const Tensor dy = g.grad_output(0).contiguous();
    Tensor dx = Tensor::empty(dy.shape(), dy.dtype(), dy.device());
    run_rows("scale_samples", dy, Tensor(), scale, dx);  // linear in x: dx = dy * scale
    return std::vector<Tensor>{dx};
  });
  return y;
}

Tensor add_scaled_samples(const Tensor& shortcut_in, const Tensor& z_in, const Tensor& scale_in) {
  const char* op = "add_scaled_samples";
  HG_CHECK(shortcut_in.defined() && z_in.defined() && scale_in.defined(), op,
           ": shortcut, z and scale must be defined");
  HG_CHECK(shortcut_in.shape() == z_in.shape() && shortcut_in.dtype() == z_in.dtype() &&
               shortcut_in.device() == z_in.device(),
           op, ": shortcut ", shortcut_in.describe(), " and z ", z_in.describe(),
           " must have one shape, dtype and device");
  check_scale(op, z_in, scale_in);
  const Tensor x = shortcut_in.contiguous(), z = z_in.contiguous(), scale = scale_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  run_rows(op, x, z, scale, y);
  autograd::record(op, {shortcut_in, z_in}, {y}, [scale](autograd::Backward& g) {
    const Tensor dy = g.grad_output(0).contiguous();
    Tensor dz;
    if (g.needs_grad(1)) {
      dz = Tensor::empty(dy.shape(), dy.dtype(), dy.device());
      run_rows("add_scaled_samples", dy, Tensor(), scale, dz);
    }
    return std::vector<Tensor>{g.needs_grad(0) ? dy : Tensor(), dz};
  });
  return y;
}

Tensor drop_path_scale(int64_t N, double drop_prob, DType act, Device device, Generator& gen) {
  check_drop_prob(drop_prob);
  const double keep = 1.0 - drop_prob;
  // Drawn through host_drawn: uploaded without a host wait, and drawn again at every replay of a
  // captured CUDA graph of the step (core/host_drawn.h); `gen` is the model's, which outlives both.
  return host_drawn(N, scale_dtype(act), device, [&gen, keep](std::vector<double>& s) {
    for (double& v : s) v = gen.uniform() < keep ? 1.0 / keep : 0.0;  // keep == 0 never keeps
  });
}

Tensor drop_path(const Tensor& x, double drop_prob, bool training, Generator& gen) {
  check_drop_prob(drop_prob);  // in eval too
  if (!training || drop_prob == 0.0) return x;
  HG_CHECK(x.ndim() >= 1, "drop_path: input must have a batch dim, got ", x.describe());
  return scale_samples(x, drop_path_scale(x.size(0), drop_prob, x.dtype(), x.device(), gen));
}

}  // namespace hg
