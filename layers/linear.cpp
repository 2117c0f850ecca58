// linear op (checks, CPU / CUDA dispatch, backward) and the Linear module.
#include "layers/linear.h"

#include <tuple>
#include <utility>

#include "core/autograd.h"
#include "core/memory.h"
#include "kernels/elementwise.h"
#include "kernels/gelu.h"
#include "kernels/layer_scale.h"
#include "kernels/linear.h"
#include "layers/dispatch.h"

namespace hg {
namespace {

// The three matrix kernels on (M, in) / (out, in) / (M, out) views of the operands.
struct LinearSizes {
  int64_t M, in, out;
};

/// y = x w^T + b, plus `shortcut` (y's shape) when it is defined: added by the GEMM's epilogue on
/// the GPU, so y is rounded once either way (bf16: f32 math on the CPU).
Tensor forward_kernel(const LinearSizes& z, const Tensor& x, const Tensor& w, const Tensor& b,
                      Shape yshape, const Tensor& shortcut = Tensor()) {
  if (cpu_bf16(x))
    return round_bf16(
        forward_kernel(z, cpu_f32(x), cpu_f32(w), cpu_f32(b), yshape, cpu_f32(shortcut)));
  Tensor y = Tensor::empty(yshape, x.dtype(), x.device());
  if (x.device() == Device::cuda) {
    HG_DISPATCH_CUDA(x.dtype(), "linear", [&] {
      const scalar_t* bias = b.defined() ? b.data<scalar_t>() : nullptr;
      if (shortcut.defined())
        kernels::cuda::linear_forward_add(z.M, z.in, z.out, x.data<scalar_t>(), w.data<scalar_t>(),
                                          bias, shortcut.data<scalar_t>(), y.data<scalar_t>());
      else
        kernels::cuda::linear_forward(z.M, z.in, z.out, x.data<scalar_t>(), w.data<scalar_t>(),
                                      bias, y.data<scalar_t>());
    });
  } else {
    HG_DISPATCH_FLOAT(x.dtype(), "linear", [&] {
      kernels::cpu::linear_forward<scalar_t>(
          z.M, z.in, z.out, x.data<scalar_t>(), w.data<scalar_t>(),
          b.defined() ? b.data<scalar_t>() : nullptr, y.data<scalar_t>());
      if (shortcut.defined())
        kernels::cpu::axpy(scalar_t(1), shortcut.data<scalar_t>(), y.data<scalar_t>(), y.numel());
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

/// The backward of GELU with GELU recomputed: from h and dL/dGELU(h) = dg, one pass writes
/// g = GELU(h) (for the next layer's weight gradient) and gh = dL/dh, one erf and one exp per
/// element. g and gh are dense tensors of h's shape, dtype and device (the caller's memory).
void gelu_recompute_backward(const Tensor& h, const Tensor& dg, Tensor& g, Tensor& gh) {
  if (h.device() == Device::cuda) {
    HG_DISPATCH_CUDA(h.dtype(), "gelu backward", [&] {
      kernels::cuda::gelu_forward_backward(h.data<scalar_t>(), dg.data<scalar_t>(),
                                           g.data<scalar_t>(), gh.data<scalar_t>(), h.numel());
    });
  } else if (cpu_bf16(h)) {  // f32 math, both outputs rounded to bf16
    const Tensor h32 = cpu_f32(h), dg32 = cpu_f32(dg);
    Tensor g32 = Tensor::empty(h.shape(), DType::f32, h.device()), gh32 = g32.clone();
    kernels::cpu::gelu_forward_backward(h32.data<float>(), dg32.data<float>(), g32.data<float>(),
                                        gh32.data<float>(), h.numel());
    g.copy_(g32);
    gh.copy_(gh32);
  } else {
    HG_DISPATCH_FLOAT(h.dtype(), "gelu backward", [&] {
      kernels::cpu::gelu_forward_backward(h.data<scalar_t>(), dg.data<scalar_t>(),
                                          g.data<scalar_t>(), gh.data<scalar_t>(), h.numel());
    });
  }
}

/// The layer scale folded into the weight and bias (kernels/layer_scale.h), in the activations'
/// dtype `act`: (gamma w, gamma b); the second is undefined without a bias. w, b, gamma are the
/// parameters (f32 for bf16 activations).
std::pair<Tensor, Tensor> fold_scale(const Tensor& w, const Tensor& b, const Tensor& gamma,
                                     DType act) {
  if (w.device() == Device::cpu && act == DType::bf16) {  // f32 math, rounded once
    const auto [wf, bf] = fold_scale(w, b, gamma, DType::f32);
    return {round_bf16(wf), round_bf16(bf)};
  }
  const int64_t out = w.size(0), in = w.size(1);
  Tensor wf = Tensor::empty({out, in}, act, w.device());
  Tensor bf = b.defined() ? Tensor::empty({out}, act, w.device()) : Tensor();
  if (w.device() == Device::cuda) {
    HG_DISPATCH_CUDA(act, "gelu_linear_residual", [&] {
      kernels::cuda::layer_scale_fold(w.data<float>(), b.defined() ? b.data<float>() : nullptr,
                                      gamma.data<float>(), wf.data<scalar_t>(),
                                      bf.defined() ? bf.data<scalar_t>() : nullptr, out, in);
    });
  } else {
    HG_DISPATCH_FLOAT(act, "gelu_linear_residual", [&] {
      kernels::cpu::layer_scale_fold<scalar_t>(
          w.data<scalar_t>(), b.defined() ? b.data<scalar_t>() : nullptr, gamma.data<scalar_t>(),
          wf.data<scalar_t>(), bf.defined() ? bf.data<scalar_t>() : nullptr, out, in);
    });
  }
  return {wf, bf};
}

/// Parameter gradients from the folded weight's and bias's (gwf, gbf: activation dtype): the
/// gradients of w, b (undefined without a bias) and gamma, in the parameters' dtype.
std::vector<Tensor> unfold_scale(const Tensor& gwf, const Tensor& gbf, const Tensor& w,
                                 const Tensor& b, const Tensor& gamma) {
  if (cpu_bf16(gwf)) return unfold_scale(cpu_f32(gwf), cpu_f32(gbf), w, b, gamma);
  const int64_t out = w.size(0), in = w.size(1);
  Tensor gw = Tensor::empty(w.shape(), w.dtype(), w.device());
  Tensor gb = b.defined() ? Tensor::empty(b.shape(), b.dtype(), b.device()) : Tensor();
  Tensor dgamma = Tensor::empty(gamma.shape(), gamma.dtype(), gamma.device());
  if (w.device() == Device::cuda) {
    HG_DISPATCH_CUDA(gwf.dtype(), "gelu_linear_residual backward", [&] {
      kernels::cuda::layer_scale_unfold(
          gwf.data<scalar_t>(), b.defined() ? gbf.data<scalar_t>() : nullptr, w.data<float>(),
          b.defined() ? b.data<float>() : nullptr, gamma.data<float>(), gw.data<float>(),
          b.defined() ? gb.data<float>() : nullptr, dgamma.data<float>(), out, in);
    });
  } else {
    HG_DISPATCH_FLOAT(w.dtype(), "gelu_linear_residual backward", [&] {
      kernels::cpu::layer_scale_unfold<scalar_t>(
          gwf.data<scalar_t>(), b.defined() ? gbf.data<scalar_t>() : nullptr, w.data<scalar_t>(),
          b.defined() ? b.data<scalar_t>() : nullptr, gamma.data<scalar_t>(), gw.data<scalar_t>(),
          b.defined() ? gb.data<scalar_t>() : nullptr, dgamma.data<scalar_t>(), out, in);
    });
  }
  return {gw, gb, dgamma};
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
      gelu_recompute_backward(h, dg, g, gh);
      memory::CategoryScope grads(Category::activations);
      if (gr.needs_grad(1)) std::tie(gw, gb) = grad_weight_bias(z, g, gy, gr.needs_grad(2));
    }
    if (gr.needs_grad(2) && !gb.defined()) gb = grad_bias(z, gy);
    return std::vector<Tensor>{gr.needs_grad(0) ? gh : Tensor(), gw, gb};
  });
  return y;
}

namespace {
/// gelu_linear_residual (shortcut defined) and gelu_linear_scaled (shortcut undefined): [shortcut
/// +] gamma * linear(gelu(h), weight, bias), gamma folded into the weight; `op` names the caller.
Tensor scaled_gelu_linear(const char* op, const Tensor& shortcut, const Tensor& h_in,
                          const Tensor& weight, const Tensor& bias, const Tensor& gamma) {
  HG_CHECK(h_in.defined() && weight.defined() && gamma.defined(), op,
           ": h, weight and gamma must be defined");
  const bool residual = shortcut.defined();
  const std::string call =
      str(residual ? str("shortcut ", shortcut.describe(), ", ") : std::string(), "h ",
          h_in.describe(), ", weight ", weight.describe(), ", bias ",
          bias.defined() ? bias.describe() : std::string("none"), ", gamma ", gamma.describe());
  HG_CHECK(h_in.ndim() >= 1 && weight.ndim() == 2 && h_in.size(-1) == weight.size(1), op,
           ": h (..., in) and weight (out, in) do not match; got ", call);
  const int64_t out = weight.size(0);
  Shape yshape = h_in.shape();
  yshape.back() = out;
  if (residual) {
    HG_CHECK(shortcut.shape() == yshape, op, ": shortcut must be ", shape_str(yshape), "; got ",
             call);
    check_same_dtype_device(op, shortcut, h_in);
  }
  HG_CHECK(gamma.shape() == Shape{out} && (!bias.defined() || bias.shape() == Shape{out}), op,
           ": gamma and bias must be (", out, "); got ", call);
  // parameters: f32 master weights for bf16 activations, else the activations' dtype
  const DType pdt = h_in.dtype() == DType::bf16 ? DType::f32 : h_in.dtype();
  for (const Tensor* p : {&weight, &bias, &gamma})
    if (p->defined())
      HG_CHECK(p->dtype() == pdt && p->device() == h_in.device(), op, ": parameters must be ",
               dtype_name(pdt), " on the device of h; got ", call);

  const LinearSizes z{h_in.numel() / h_in.size(-1), weight.size(1), out};
  const Tensor h = h_in.contiguous(), w = weight.contiguous();
  const Tensor x = residual ? shortcut.contiguous() : Tensor();
  const Tensor b = bias.defined() ? bias.contiguous() : Tensor(), gm = gamma.contiguous();
  const auto [wf, bf] = fold_scale(w, b, gm, h.dtype());  // (out, in): saved for the backward
  Tensor y;
  {
    memory::CategoryScope scratch(Category::workspace);  // GELU(h): as in gelu_linear
    const Tensor g = gelu_raw(h);
    memory::CategoryScope act(Category::activations);
    y = forward_kernel(z, g, wf, bf, yshape, x);
  }
  std::vector<Tensor> inputs = {shortcut, h_in, weight, bias, gamma};
  if (!residual) inputs.erase(inputs.begin());
  autograd::record(op, inputs, {y}, [z, h, wf, w, b, gm, residual](autograd::Backward& gr) {
    const Tensor gy = gr.grad_output(0).contiguous();
    const int first = residual ? 1 : 0;  // the index of h among the inputs
    const bool want_h = gr.needs_grad(first);
    const bool want_params =
        gr.needs_grad(first + 1) || gr.needs_grad(first + 2) || gr.needs_grad(first + 3);
    // dL/dGELU(h) = gy (gamma w), through the folded weight; then gelu_linear's order (dg,
    // gh, then GELU(h) in scratch), which keeps the step's pool as packed as before
    const Tensor dg = want_h ? grad_input(z, gy, wf, h.shape()) : Tensor();
    Tensor gh = want_h ? Tensor::empty(h.shape(), h.dtype(), h.device()) : Tensor();
    std::vector<Tensor> gp(3);  // weight, bias, gamma
    {
      memory::CategoryScope scratch(Category::workspace);
      Tensor g;
      if (want_h) {
        g = Tensor::empty(h.shape(), h.dtype(), h.device());
        gelu_recompute_backward(h, dg, g, gh);
      } else if (want_params) {
        g = gelu_raw(h);
      }
      if (want_params) {
        const auto [gwf, gbf] = grad_weight_bias(z, g, gy, b.defined());
        memory::CategoryScope grads(Category::activations);
        gp = unfold_scale(gwf, gbf, w, b, gm);
      }
    }
    std::vector<Tensor> grads;
    if (residual) grads.push_back(gr.needs_grad(0) ? gy : Tensor());  // y = shortcut + ...
    grads.push_back(gh);
    for (int i = 0; i < 3; ++i) grads.push_back(gr.needs_grad(first + 1 + i) ? gp[i] : Tensor());
    return grads;
  });
  return y;
}
}  // namespace

Tensor gelu_linear_residual(const Tensor& shortcut, const Tensor& h, const Tensor& weight,
                            const Tensor& bias, const Tensor& gamma) {
  HG_CHECK(shortcut.defined(), "gelu_linear_residual: shortcut must be defined");
  return scaled_gelu_linear("gelu_linear_residual", shortcut, h, weight, bias, gamma);
}

Tensor gelu_linear_scaled(const Tensor& h, const Tensor& weight, const Tensor& bias,
                          const Tensor& gamma) {
  return scaled_gelu_linear("gelu_linear_scaled", Tensor(), h, weight, bias, gamma);
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
