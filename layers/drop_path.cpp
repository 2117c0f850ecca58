// drop_path / scale_samples with autograd (see drop_path.h). The per-sample mask is drawn on the
// host (N numbers per call) so a seeded Generator reproduces it on any device.
#include "layers/drop_path.h"

#include <vector>

#include "core/autograd.h"
#include "kernels/drop_path.h"

namespace hg {
namespace {
void run_scale_rows(const Tensor& x, const Tensor& scale, Tensor& y) {
  const int64_t N = x.size(0), inner = N ? x.numel() / N : 0;
  if (x.device() == Device::cuda) {
#ifdef HAARGRAD_WITH_CUDA
    check_dtype("scale_samples", x, DType::f32);
    kernels::cuda::scale_rows(x.data<float>(), scale.data<float>(), y.data<float>(), N, inner);
#else
    throw Error("scale_samples: built without CUDA");
#endif
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), "scale_samples", [&] {
      kernels::cpu::scale_rows(x.data<scalar_t>(), scale.data<scalar_t>(), y.data<scalar_t>(), N,
                               inner);
    });
  }
}
}  // namespace

Tensor scale_samples(const Tensor& x_in, const Tensor& scale_in) {
  HG_CHECK(x_in.ndim() >= 1, "scale_samples: input must have a batch dim, got ", x_in.describe());
  HG_CHECK(scale_in.shape() == Shape{x_in.size(0)}, "scale_samples: scale must be [", x_in.size(0),
           "] for input ", x_in.describe(), ", got ", scale_in.describe());
  check_same_dtype_device("scale_samples", x_in, scale_in);
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
  std::vector<double> s(static_cast<size_t>(x.size(0)));
  for (double& v : s) v = gen.uniform() < keep ? 1.0 / keep : 0.0;  // keep == 0 never keeps
  Tensor scale = Tensor::from_vector<double>({x.size(0)}, s).to(x.dtype()).to(x.device());
  return scale_samples(x, scale);
}

}  // namespace hg
