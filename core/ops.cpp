// Tensor-level ops: checks, dispatch to kernels/, and the backward rules.
#include "core/ops.h"

#include <algorithm>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "kernels/elementwise.h"
#include "kernels/matmul.h"

namespace hg::ops {
namespace {

bool on_cuda(const Tensor& t) { return t.device() == Device::cuda; }

// Runs a binary elementwise kernel on dense copies of a and b (bf16 on the CPU: in f32, rounded).
template <typename CpuF, typename CudaF>
Tensor binary(const char* name, const Tensor& a_in, const Tensor& b_in, CpuF cpu_f, CudaF cuda_f) {
  check_same_shape(name, a_in, b_in);
  check_same_dtype_device(name, a_in, b_in);
  if (cpu_bf16(a_in)) return round_bf16(binary(name, cpu_f32(a_in), cpu_f32(b_in), cpu_f, cuda_f));
  Tensor a = a_in.contiguous(), b = b_in.contiguous();
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  if (on_cuda(a)) {
    HG_DISPATCH_CUDA(a.dtype(), name, [&] {
      cuda_f(a.data<scalar_t>(), b.data<scalar_t>(), out.data<scalar_t>(), a.numel());
    });
  } else {
    HG_DISPATCH_FLOAT(a.dtype(), name, [&] {
      cpu_f(a.data<scalar_t>(), b.data<scalar_t>(), out.data<scalar_t>(), a.numel());
    });
  }
  return out;
}

#define HG_CUDA_FN(f) [](const auto* x, const auto* y, auto* o, int64_t n) { kernels::cuda::f(x, y, o, n); }

std::vector<size_t> normalize_axes(const char* op, const Tensor& x, const std::vector<int>& axes) {
  const int n = x.ndim();
  std::vector<size_t> out;
  for (int a : axes) {
    HG_CHECK(a >= -n && a < n, op, ": axis ", a, " out of range for ", x.describe());
    size_t d = static_cast<size_t>(a < 0 ? a + n : a);
    HG_CHECK(std::find(out.begin(), out.end(), d) == out.end(), op, ": axis ", a, " repeated");
    out.push_back(d);
  }
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = binary("add", a, b, [](auto* x, auto* y, auto* o, int64_t n) { kernels::cpu::add(x, y, o, n); },
                      HG_CUDA_FN(add));
  autograd::record("add", {a, b}, {out}, [](autograd::Backward& g) {
    return std::vector<Tensor>{g.grad_output(0), g.grad_output(0)};
  });
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary("sub", a, b, [](auto* x, auto* y, auto* o, int64_t n) { kernels::cpu::sub(x, y, o, n); },
                      HG_CUDA_FN(sub));
  autograd::record("sub", {a, b}, {out}, [](autograd::Backward& g) {
    return std::vector<Tensor>{g.grad_output(0), g.needs_grad(1) ? scale(g.grad_output(0), -1.0) : Tensor()};
  });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary("mul", a, b, [](auto* x, auto* y, auto* o, int64_t n) { kernels::cpu::mul(x, y, o, n); },
                      HG_CUDA_FN(mul));
  autograd::record("mul", {a, b}, {out}, [a, b](autograd::Backward& g) {
    return std::vector<Tensor>{g.needs_grad(0) ? mul(g.grad_output(0), b) : Tensor(),
                               g.needs_grad(1) ? mul(g.grad_output(0), a) : Tensor()};
  });
  return out;
}

Tensor scale(const Tensor& a_in, double s) {
  Tensor a = a_in.contiguous();
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  if (on_cuda(a)) {
    HG_DISPATCH_CUDA(a.dtype(), "scale", [&] {
      kernels::cuda::scale(a.data<scalar_t>(), static_cast<float>(s), out.data<scalar_t>(), a.numel());
    });
  } else if (cpu_bf16(a)) {
    autograd::NoGradGuard no_grad;
    out.copy_(scale(cpu_f32(a), s));
  } else {
    HG_DISPATCH_FLOAT(a.dtype(), "scale", [&] {
      kernels::cpu::scale(a.data<scalar_t>(), static_cast<scalar_t>(s), out.data<scalar_t>(), a.numel());
    });
  }
  autograd::record("scale", {a_in}, {out}, [s](autograd::Backward& g) {
    return std::vector<Tensor>{scale(g.grad_output(0), s)};
  });
  return out;
}

void add_(Tensor& dst, const Tensor& src_in) {
  check_same_shape("add_", dst, src_in);
  check_same_dtype_device("add_", dst, src_in);
  HG_CHECK(dst.is_contiguous(), "add_: destination must be contiguous, got ", dst.describe());
  Tensor src = src_in.contiguous();
  if (on_cuda(dst)) {
    HG_DISPATCH_CUDA(dst.dtype(), "add_", [&] {
      kernels::cuda::axpy(1.0f, src.data<scalar_t>(), dst.data<scalar_t>(), dst.numel());
    });
    return;
  }
  if (cpu_bf16(dst)) {  // f32 sum, rounded once
    Tensor sum = cpu_f32(dst);
    add_(sum, cpu_f32(src));
    dst.copy_(sum);
    return;
  }
  HG_DISPATCH_FLOAT(dst.dtype(), "add_", [&] {
    kernels::cpu::axpy(scalar_t(1), src.data<scalar_t>(), dst.data<scalar_t>(), dst.numel());
  });
}

Tensor matmul(const Tensor& a_in, const Tensor& b_in, bool ta, bool tb) {
  check_ndim("matmul", a_in, 2);
  check_ndim("matmul", b_in, 2);
  check_same_dtype_device("matmul", a_in, b_in);
  const int64_t M = ta ? a_in.size(1) : a_in.size(0), K = ta ? a_in.size(0) : a_in.size(1);
  const int64_t Kb = tb ? b_in.size(1) : b_in.size(0), N = tb ? b_in.size(0) : b_in.size(1);
  HG_CHECK(K == Kb, "matmul: inner sizes differ: ", a_in.describe(), (ta ? "^T" : ""), " @ ",
           b_in.describe(), (tb ? "^T" : ""));
  Tensor a = a_in.contiguous(), b = b_in.contiguous();
  Tensor c = Tensor::empty({M, N}, a.dtype(), a.device());
  if (on_cuda(a)) {
    HG_DISPATCH_CUDA(a.dtype(), "matmul", [&] {
      kernels::cuda::gemm(ta, tb, M, N, K, 1.0f, a.data<scalar_t>(), b.data<scalar_t>(), 0.0f,
                          c.data<scalar_t>());
    });
  } else if (cpu_bf16(a)) {
    autograd::NoGradGuard no_grad;
    c.copy_(matmul(cpu_f32(a), cpu_f32(b), ta, tb));
  } else {
    HG_DISPATCH_FLOAT(a.dtype(), "matmul", [&] {
      kernels::cpu::gemm<scalar_t>(ta, tb, M, N, K, 1, a.data<scalar_t>(), b.data<scalar_t>(), 0,
                                   c.data<scalar_t>());
    });
  }
  autograd::record("matmul", {a_in, b_in}, {c}, [a, b, ta, tb](autograd::Backward& g) {
    const Tensor& gc = g.grad_output(0);  // (M, N)
    Tensor ga, gb;
    // C = op(A) op(B): dop(A) = gC op(B)^T, dop(B) = op(A)^T gC; transpose back when stored transposed.
    if (g.needs_grad(0)) ga = ta ? matmul(b, gc, tb, true) : matmul(gc, b, false, !tb);
    if (g.needs_grad(1)) gb = tb ? matmul(gc, a, true, ta) : matmul(a, gc, !ta, false);
    return std::vector<Tensor>{ga, gb};
  });
  return c;
}

Tensor broadcast_to(const Tensor& x_in, const Shape& shape) {
  HG_CHECK(x_in.ndim() == static_cast<int>(shape.size()), "broadcast_to: ", x_in.describe(),
           " to ", shape_str(shape), ": ranks differ");
  for (size_t d = 0; d < shape.size(); ++d)
    HG_CHECK(x_in.shape()[d] == shape[d] || x_in.shape()[d] == 1, "broadcast_to: cannot broadcast ",
             x_in.describe(), " to ", shape_str(shape));
  // Host loop (only reduction backward uses this; the layers have their own kernels).
  Tensor out;
  {
    autograd::NoGradGuard no_record;
    std::vector<double> src = x_in.to_vector<double>(), dst(static_cast<size_t>(shape_numel(shape)));
    const Shape xs = contiguous_strides(x_in.shape()), os = contiguous_strides(shape);
    for (size_t i = 0; i < dst.size(); ++i) {
      int64_t rem = static_cast<int64_t>(i), src_off = 0;
      for (size_t d = 0; d < shape.size(); ++d) {
        const int64_t idx = rem / os[d];
        rem %= os[d];
        if (x_in.shape()[d] != 1) src_off += idx * xs[d];
      }
      dst[i] = src[static_cast<size_t>(src_off)];
    }
    out = Tensor::from_vector(shape, dst).to(x_in.dtype()).to(x_in.device());
  }
  Shape in_shape = x_in.shape();
  autograd::record("broadcast_to", {x_in}, {out}, [in_shape, shape](autograd::Backward& g) {
    std::vector<int> axes;
    for (size_t d = 0; d < shape.size(); ++d)
      if (in_shape[d] == 1 && shape[d] != 1) axes.push_back(static_cast<int>(d));
    return std::vector<Tensor>{axes.empty() ? g.grad_output(0) : sum(g.grad_output(0), axes, true)};
  });
  return out;
}

Tensor sum(const Tensor& x_in, const std::vector<int>& axes_in, bool keepdim) {
  // bf16: summed in f32, rounded once (the gradient flows back through both casts)
  if (x_in.dtype() == DType::bf16)
    return sum(x_in.to(DType::f32), axes_in, keepdim).to(DType::bf16);
  std::vector<size_t> axes = normalize_axes("sum", x_in, axes_in);
  HG_CHECK(x_in.device() == Device::cpu, "sum: only the CPU reduction exists; got ", x_in.describe());
  Tensor x = x_in.contiguous();
  Shape kshape = x.shape();
  for (size_t d : axes) kshape[d] = 1;
  Tensor out = Tensor::zeros(kshape, x.dtype(), x.device());
  HG_DISPATCH_FLOAT(x.dtype(), "sum", [&] {
    const scalar_t* src = x.data<scalar_t>();
    scalar_t* dst = out.data<scalar_t>();
    Shape xs = contiguous_strides(x.shape()), ks = contiguous_strides(kshape);
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, o = 0;
      for (size_t d = 0; d < xs.size(); ++d) {
        int64_t idx = rem / xs[d];
        rem %= xs[d];
        if (kshape[d] != 1) o += idx * ks[d];
      }
      dst[o] += src[i];
    }
  });
  Shape final_shape;
  for (size_t d = 0; d < kshape.size(); ++d)
    if (keepdim || std::find(axes.begin(), axes.end(), d) == axes.end()) final_shape.push_back(kshape[d]);
  Tensor result = out.reshape(final_shape);
  Shape in_shape = x_in.shape();
  autograd::record("sum", {x_in}, {result}, [in_shape, kshape](autograd::Backward& g) {
    return std::vector<Tensor>{broadcast_to(g.grad_output(0).reshape(kshape), in_shape)};
  });
  return result;
}

Tensor mean(const Tensor& x, const std::vector<int>& axes, bool keepdim) {
  // bf16: in f32, rounded once (as sum)
  if (x.dtype() == DType::bf16) return mean(x.to(DType::f32), axes, keepdim).to(DType::bf16);
  int64_t count = 1;
  for (size_t d : normalize_axes("mean", x, axes)) count *= x.shape()[d];
  return scale(sum(x, axes, keepdim), count ? 1.0 / static_cast<double>(count) : 0.0);
}

Tensor sum_all(const Tensor& x) {
  std::vector<int> axes(static_cast<size_t>(x.ndim()));
  for (int i = 0; i < x.ndim(); ++i) axes[static_cast<size_t>(i)] = i;
  return sum(x, axes, false);
}

}  // namespace hg::ops
