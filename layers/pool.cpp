// global_avg_pool op (checks, CPU / CUDA dispatch, backward) and flatten.
#include "layers/pool.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "kernels/pool.h"

namespace hg {
namespace {

Tensor pool_backward(const Tensor& gy, const Shape& xshape) {
  if (cpu_bf16(gy)) return round_bf16(pool_backward(cpu_f32(gy), xshape));
  const int64_t N = xshape[0], HW = xshape[1] * xshape[2], C = xshape[3];
  Tensor gx = Tensor::empty(xshape, gy.dtype(), gy.device());
  if (gy.device() == Device::cuda) {
    HG_DISPATCH_CUDA(gy.dtype(), "global_avg_pool backward", [&] {
      kernels::cuda::global_avg_pool_backward(N, HW, C, gy.data<scalar_t>(), gx.data<scalar_t>());
    });
  } else {
    HG_DISPATCH_FLOAT(gy.dtype(), "global_avg_pool backward", [&] {
      kernels::cpu::global_avg_pool_backward<scalar_t>(N, HW, C, gy.data<scalar_t>(),
                                                       gx.data<scalar_t>());
    });
  }
  return gx;
}

}  // namespace

Tensor global_avg_pool(const Tensor& x_in) {
  HG_CHECK(x_in.defined(), "global_avg_pool: x is undefined");
  HG_CHECK(x_in.ndim() == 4 && x_in.size(1) * x_in.size(2) > 0,
           "global_avg_pool: x must be (N, H, W, C) NHWC with H*W > 0; got ", x_in.describe());
  Tensor x = x_in.contiguous();
  const int64_t N = x.size(0), HW = x.size(1) * x.size(2), C = x.size(3);
  Tensor y = Tensor::empty({N, C}, x.dtype(), x.device());
  if (cpu_bf16(x)) {
    autograd::NoGradGuard no_grad;
    y.copy_(global_avg_pool(cpu_f32(x)));  // f32 math, rounded to bf16
  } else if (x.device() == Device::cuda) {
    HG_DISPATCH_CUDA(x.dtype(), "global_avg_pool", [&] {
      kernels::cuda::global_avg_pool_forward(N, HW, C, x.data<scalar_t>(), y.data<scalar_t>());
    });
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), "global_avg_pool", [&] {
      kernels::cpu::global_avg_pool_forward<scalar_t>(N, HW, C, x.data<scalar_t>(),
                                                      y.data<scalar_t>());
    });
  }
  Shape xshape = x.shape();  // backward needs only the shape, not x
  autograd::record("global_avg_pool", {x_in}, {y}, [xshape](autograd::Backward& g) {
    return std::vector<Tensor>{pool_backward(g.grad_output(0).contiguous(), xshape)};
  });
  return y;
}

Tensor flatten(const Tensor& x, int start_dim) {
  HG_CHECK(x.defined(), "flatten: x is undefined");
  const int nd = x.ndim();
  HG_CHECK(start_dim >= -nd && start_dim < nd, "flatten: start_dim ", start_dim,
           " out of range for ", x.describe());
  const int d0 = start_dim < 0 ? start_dim + nd : start_dim;
  Shape s(x.shape().begin(), x.shape().begin() + d0);
  s.push_back(-1);
  if (x.numel() == 0) {  // -1 cannot be inferred from zero elements
    int64_t tail = 1;
    for (int d = d0; d < nd; ++d) tail *= x.size(d);
    s.back() = tail;
  }
  return x.reshape(s);
}

}  // namespace hg
