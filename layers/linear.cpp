// linear op (checks, CPU / CUDA dispatch, backward) and the Linear module.
#include "layers/linear.h"

#include <tuple>
#include <utility>

#include "core/autograd.h"
#include "core/memory.h"
#include "layers/dispatch.h"
#include "kernels/gelu.h"
#include "kernels/linear.h"

namespace hg {
namespace {

// The three matrix kernels on (M, in) / (out, in) / (M, out) views of the operands.
struct LinearSizes {
  int64_t M, in, out;
};

Tensor forward_kernel(const LinearSizes& z, const Tensor& x, const Tensor& w, const Tensor& b,
                      Shape yshape) {
  if (cpu_bf16(x)) return round_bf16(forward_kernel(z, cpu_f32(x), cpu_f32(w), cpu_f32(b), yshape));
  Tensor y = Tensor::empty(yshape, x.dtype(), x.device());
  if (x.device() == Device::cuda) {
    HG_DISPATCH_CUDA(x.dtype(), "linear", [&] {
      kernels::cuda::linear_forward(z.M, z.in, z.out, x.data<scalar_t>(), w.data<scalar_t>(),
                                    b.defined() ? b.data<scalar_t>() : nullptr, y.data<scalar_t>());
    });
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), "linear", [&] {
      kernels::cpu::linear_forward<scalar_t>(
          z.M, z.in, z.out, x.data<scalar_t>(), w.data<scalar_t>(),
          b.defined() ? b.data<scalar_t>() : nullptr, y.data<scalar_t>());
    });
  }
  return y;
}

Tensor grad_input(const LinearSizes& z, const Tensor& gy, const Tensor& w, const Shape& xshape) {
  if (cpu_bf16(gy)) return round_bf16(grad_input(z, cpu_f32(gy), cpu_f32(w), xshape));
  Tensor gx = Tensor::empty(xshape, gy.dtype(), gy.device());
  if (gy.device() == Device::cuda) {
    HG_DISPATCH_CUDA(gy.dtype(), "linear backward", [&] {
      kernels::cuda::linear_backward_input(z.M, z.in, z.out, gy.data<scalar_t>(), w.data<scalar_t>(),
                                           gx.data<scalar_t>());
    });
  } else {
    HG_DISPATCH_FLOAT(gy.dtype(), "linear backward", [&] {
      kernels::cpu::linear_backward_input<scalar_t>(z.M, z.in, z.out, gy.data<scalar_t>(),
                                                    w.data<scalar_t>(), gx.data<scalar_t>());
    });
  }
  return gx;
}

Tensor grad_weight(const LinearSizes& z, const Tensor& x, const Tensor& gy) {
  if (cpu_bf16(gy)) return round_bf16(grad_weight(z, cpu_f32(x), cpu_f32(gy)));
  Tensor gw = Tensor::empty({z.out, z.in}, gy.dtype(), gy.device());
  if (gy.device() == Device::cuda) {
    HG_DISPATCH_CUDA(gy.dtype(), "linear backward", [&] {
      kernels::cuda::linear_backward_weight(z.M, z.in, z.out, x.data<scalar_t>(), gy.data<scalar_t>(),
                                            gw.data<scalar_t>());
    });
  } else {
    HG_DISPATCH_FLOAT(gy.dtype(), "linear backward", [&] {
      kernels::cpu::linear_backward_weight<scalar_t>(z.M, z.in, z.out, x.data<scalar_t>(),
                                                     gy.data<scalar_t>(), gw.data<scalar_t>());
    });
  }
  return gw;
}

Tensor grad_bias(const LinearSizes& z, const Tensor& gy) {
  if (cpu_bf16(gy)) return round_bf16(grad_bias(z, cpu_f32(gy)));
  Tensor gb = Tensor::empty({z.out}, gy.dtype(), gy.device());
  if (gy.device() == Device::cuda) {
    HG_DISPATCH_CUDA(gy.dtype(), "linear backward", [&] {
      kernels::cuda::bias_grad_rows(z.M, z.out, gy.data<scalar_t>(), gb.data<scalar_t>());
    });
  } else {
    HG_DISPATCH_FLOAT(gy.dtype(), "linear backward", [&] {
      kernels::cpu::bias_grad_rows<scalar_t>(z.M, z.out, gy.data<scalar_t>(), gb.data<scalar_t>());
    });
  }
  return gb;
}

/// The weight gradient and, when `want_bias`, the bias gradient. On the GPU both come from one
/// GEMM (its epilogue sums grad_y's columns while reading it); elsewhere from the two kernels.
std::pair<Tensor, Tensor> grad_weight_bias(const LinearSizes& z, const Tensor& x, const Tensor& gy,
                                           bool want_bias) {
  if (!want_bias || gy.device() != Device::cuda) {
    return {grad_weight(z, x, gy), want_bias ? grad_bias(z, gy) : Tensor()};
  }
  Tensor gw = Tensor::empty({z.out, z.in}, gy.dtype(), gy.device());
  Tensor gb = Tensor::empty({z.out}, gy.dtype(), gy.device());
  HG_DISPATCH_CUDA(gy.dtype(), "linear backward", [&] {
    kernels::cuda::linear_backward_weight_bias(z.M, z.in, z.out, x.data<scalar_t>(),
                                               gy.data<scalar_t>(), gw.data<scalar_t>(),
                                               gb.data<scalar_t>());
  });
  return {gw, gb};
}

}  // namespace

Tensor linear(const Tensor& x_in, const Tensor& w_param, const Tensor& b_param) {
  HG_CHECK(x_in.defined() && w_param.defined(), "linear: x and weight must be defined");
  const Tensor w_in = compute_copy(w_param, x_in), b_in = compute_copy(b_param, x_in);
  const std::string call = str("x ", x_in.describe(), ", weight ", w_in.describe(), ", bias ",
                               b_in.defined() ? b_in.describe() : std::string("none"));
  HG_CHECK(x_in.ndim() >= 1, "linear: x must have at least one dim; got ", call);
  HG_CHECK(w_in.ndim() == 2, "linear: weight must be (out, in); got ", call);
  check_same_dtype_device("linear", x_in, w_in);
  HG_CHECK(x_in.size(-1) == w_in.size(1), "linear: x.size(-1) must equal weight.size(1); got ",
           call);
  if (b_in.defined()) {
    check_same_dtype_device("linear", x_in, b_in);
    HG_CHECK(b_in.ndim() == 1 && b_in.size(0) == w_in.size(0), "linear: bias must be (",
             w_in.size(0), "); got ", call);
  }

  const LinearSizes z{x_in.numel() / x_in.size(-1), w_in.size(1), w_in.size(0)};
  Shape yshape = x_in.shape();
  yshape.back() = z.out;
  Tensor x = x_in.contiguous(), w = w_in.contiguous();
  Tensor b = b_in.defined() ? b_in.contiguous() : Tensor();
  Tensor y = forward_kernel(z, x, w, b, yshape);

  Tensor saved_x = w_in.requires_grad() ? x : Tensor();  // only what backward will read
  Tensor saved_w = x_in.requires_grad() ? w : Tensor();
  Shape xshape = x_in.shape();
  autograd::record(
      "linear", {x_in, w_in, b_in}, {y}, [z, saved_x, saved_w, xshape](autograd::Backward& g) {
        Tensor gy = g.grad_output(0).contiguous();
        Tensor gx = g.needs_grad(0) ? grad_input(z, gy, saved_w, xshape) : Tensor(), gw, gb;
        if (g.needs_grad(1))
          std::tie(gw, gb) = grad_weight_bias(z, saved_x, gy, g.needs_grad(2));
        else if (g.needs_grad(2))
          gb = grad_bias(z, gy);
        return std::vector<Tensor>{gx, gw, gb};
      });
  return y;
}

// GELU on a dense tensor, no autograd (the fused op below records itself).
Tensor gelu_raw(const Tensor& h) {
  if (cpu_bf16(h)) return round_bf16(gelu_raw(cpu_f32(h)));
  Tensor g = Tensor::empty(h.shape(), h.dtype(), h.device());
  if (h.device() == Device::cuda) {
    HG_DISPATCH_CUDA(h.dtype(), "gelu_linear", [&] {
      kernels::cuda::gelu_forward(h.data<scalar_t>(), g.data<scalar_t>(), h.numel());
    });
  } else {
    HG_DISPATCH_FLOAT(h.dtype(), "gelu_linear", [&] {
      kernels::cpu::gelu_forward(h.data<scalar_t>(), g.data<scalar_t>(), h.numel());
    });
  }
  return g;
}

Tensor gelu_linear(const Tensor& h_in, const Tensor& w_param, const Tensor& b_param) {
  HG_CHECK(h_in.defined() && w_param.defined(), "gelu_linear: h and weight must be defined");
  const Tensor w_in = compute_copy(w_param, h_in), b_in = compute_copy(b_param, h_in);
  HG_CHECK(w_in.ndim() == 2 && h_in.ndim() >= 1 &&
               h_in.size(-1) == w_in.size(1),
           "gelu_linear: h ", h_in.describe(), " does not match weight ", w_in.describe());
  check_same_dtype_device("gelu_linear", h_in, w_in);
  const LinearSizes z{h_in.numel() / h_in.size(-1), w_in.size(1), w_in.size(0)};
  Shape yshape = h_in.shape();
  yshape.back() = z.out;
  const Tensor h = h_in.contiguous(), w = w_in.contiguous();
  const Tensor b = b_in.defined() ? b_in.contiguous() : Tensor();
  Tensor y;
  {
    // GELU(h) is a temporary: workspace memory, returned right after the GEMM, never saved for
    // the backward.
    memory::CategoryScope scratch(Category::workspace);
    const Tensor g = gelu_raw(h);
    memory::CategoryScope act(Category::activations);
    y = forward_kernel(z, g, w, b, yshape);
  }
  autograd::record("gelu_linear", {h_in, w_in, b_in}, {y}, [z, h, w](autograd::Backward& gr) {
    const Tensor gy = gr.grad_output(0).contiguous();
    // dL/dGELU(h) first (needs only W), then ONE pass recomputes GELU(h) for the weight gradient
    // and turns dL/dGELU(h) into dL/dh (one erf, one exp per element).
    Tensor dg = gr.needs_grad(0) ? grad_input(z, gy, w, h.shape()) : Tensor::zeros(h.shape(), h.dtype(), h.device());
    Tensor gh = Tensor::empty(h.shape(), h.dtype(), h.device()), gw, gb;
    {
      memory::CategoryScope scratch(Category::workspace);
      Tensor g = Tensor::empty(h.shape(), h.dtype(), h.device());
      if (h.device() == Device::cuda) {
        HG_DISPATCH_CUDA(h.dtype(), "gelu_linear backward", [&] {
          kernels::cuda::gelu_forward_backward(h.data<scalar_t>(), dg.data<scalar_t>(), g.data<scalar_t>(),
                                               gh.data<scalar_t>(), h.numel());
        });
      } else if (cpu_bf16(h)) {  // f32 math, both outputs rounded to bf16
        const Tensor h32 = cpu_f32(h), dg32 = cpu_f32(dg);
        Tensor g32 = Tensor::empty(h.shape(), DType::f32, h.device()), gh32 = g32.clone();
        kernels::cpu::gelu_forward_backward(h32.data<float>(), dg32.data<float>(), g32.data<float>(),
                                            gh32.data<float>(), h.numel());
        g.copy_(g32);
        gh.copy_(gh32);
      } else {
        HG_DISPATCH_FLOAT(h.dtype(), "gelu_linear backward", [&] {
          kernels::cpu::gelu_forward_backward(h.data<scalar_t>(), dg.data<scalar_t>(), g.data<scalar_t>(),
                                              gh.data<scalar_t>(), h.numel());
        });
      }
      memory::CategoryScope grads(Category::activations);
      if (gr.needs_grad(1)) std::tie(gw, gb) = grad_weight_bias(z, g, gy, gr.needs_grad(2));
    }
    if (gr.needs_grad(2) && !gb.defined()) gb = grad_bias(z, gy);
    return std::vector<Tensor>{gr.needs_grad(0) ? gh : Tensor(), gw, gb};
  });
  return y;
}

Linear::Linear(int64_t in, int64_t out, Generator& gen, bool has_bias, DType dtype, Device device)
    : in_features(in), out_features(out) {
  HG_CHECK(in > 0 && out > 0, "Linear: bad sizes in ", in, " out ", out);
  weight = make_parameter({out, in}, dtype, device);
  trunc_normal_(weight, gen, 0.0, 0.02);                      // timm ConvNeXt._init_weights
  if (has_bias) bias = make_parameter({out}, dtype, device);  // zeros
}

void Linear::collect(const std::string& prefix, std::vector<ParamRef>& out) const {
  out.push_back({prefix + "weight", weight, true, false});
  if (bias.defined()) out.push_back({prefix + "bias", bias, true, true});
}

}  // namespace hg
