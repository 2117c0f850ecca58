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
// y = x * scale[n] per sample; scale is f32 when x is bf16 (else x's dtype).
void run_scale_rows(const Tensor& x, const Tensor& scale, Tensor& y) {
  if (cpu_bf16(x)) {  // f32 math, rounded to bf16
    Tensor y32 = Tensor::empty(x.shape(), DType::f32, x.device());
    run_scale_rows(cpu_f32(x), scale, y32);
    y.copy_(y32);
    return;
  }
  const int64_t N = x.size(0), inner = N ? x.numel() / N : 0;
  if (x.device() == Device::cuda) {
    HG_DISPATCH_CUDA(x.dtype(), "scale_samples", [&] {
      kernels::cuda::scale_rows(x.data<scalar_t>(), scale.data<float>(), y.data<scalar_t>(), N,
                                inner);
    });
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), "scale_samples", [&] {
      kernels::cpu::scale_rows(x.data<scalar_t>(), scale.data<scalar_t>(), y.data<scalar_t>(), N,
                               inner);
    });
  }
}

/// The dtype of a per-sample scale for activations of dtype t (f32 for bf16 activations).
DType scale_dtype(DType t) { return t == DType::bf16 ? DType::f32 : t; }
}  // namespace

Tensor scale_samples(const Tensor& x_in, const Tensor& scale_in) {
  HG_CHECK(x_in.ndim() >= 1, "scale_samples: input must have a batch dim, got ", x_in.describe());
  HG_CHECK(scale_in.shape() == Shape{x_in.size(0)}, "scale_samples: scale must be [", x_in.size(0),
           "] for input ", x_in.describe(), ", got ", scale_in.describe());
  HG_CHECK(scale_in.dtype() == scale_dtype(x_in.dtype()) && scale_in.device() == x_in.device(),
           "scale_samples: scale must be ", dtype_name(scale_dtype(x_in.dtype())), " on the device of ",
           x_in.describe(), ", got ", scale_in.describe());
  const Tensor x = x_in.contiguous(), scale = scale_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  run_scale_rows(x, scale, y);
  autograd::record("scale_samples", {x_in}, {y}, [scale](autograd::Backward& g) {
    const Tensor dy = g.grad_output(0).contiguous();
    Tensor dx = Tensor::empty(dy.shape(), dy.dtype(), dy.device());
    run_scale_rows(dy, scale, dx);  // the op is linear in x: dx = dy * scale
    return std::vector<Tensor>{dx};
  });
  return y;
}

Tensor drop_path(const Tensor& x, double drop_prob, bool training, Generator& gen) {
  HG_CHECK(drop_prob >= 0.0 && drop_prob <= 1.0, "drop_path: drop_prob must be in [0, 1], got ",
           drop_prob);
  if (!training || drop_prob == 0.0) return x;
  HG_CHECK(x.ndim() >= 1, "drop_path: input must have a batch dim, got ", x.describe());
  const double keep = 1.0 - drop_prob;
  // Drawn through host_drawn: uploaded without a host wait, and drawn again at every replay of a
  // captured CUDA graph of the step (core/host_drawn.h); `gen` is the model's, which outlives both.
  const Tensor scale = host_drawn(
      x.size(0), scale_dtype(x.dtype()), x.device(), [&gen, keep](std::vector<double>& s) {
        for (double& v : s) v = gen.uniform() < keep ? 1.0 / keep : 0.0;  // keep == 0 never keeps
      });
  return scale_samples(x, scale);
}

}  // namespace hg
