// Fully connected layer over the last dim: the autograd op `linear` and the `Linear` module (timm /
// PyTorch nn.Linear semantics and parameter names). Kernels: kernels/linear.h.
#pragma once

#include <string>
#include <vector>

#include "core/random.h"
#include "core/tensor.h"
#include "layers/module.h"

namespace hg {

/// y = x @ weight^T + bias over the last dim of x (like torch.nn.functional.linear), so a ConvNeXt
/// MLP runs on NHWC activations without permutes.
///   x      (..., in), any rank >= 1
///   weight (out, in)   PyTorch layout
///   bias   (out), or an undefined Tensor for none
///   -> y   (..., out)
/// dtype: f32 or f64 on the CPU, f32 on CUDA, one for all; or bf16 x (CPU, CUDA) with f32 weight
/// and bias, y bf16, f32 accumulation (layers/dispatch.h); one device for all. Gradients for all
/// three. Throws hg::Error naming "linear" and the shapes on rank, size, dtype or device
/// mismatches.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

/// linear(gelu(h), weight, bias) fused for memory: GELU(h) is computed into scratch memory for
/// the GEMM and recomputed in the backward, so the only activation saved is h (the ConvNeXt MLP's
/// hidden tensor is stored once, not twice: 4C instead of 8C floats per pixel). h (..., in),
/// weight (out, in), bias (out) or undefined; gradients for all three. Same dtypes as linear.
Tensor gelu_linear(const Tensor& h, const Tensor& weight, const Tensor& bias);

/// The end of a ConvNeXt block without drop path: shortcut + gamma * linear(gelu(h), weight, bias),
/// with the layer scale folded into the weight (kernels/layer_scale.h: gamma w, gamma b, made once
/// per call) and the residual add read by the GEMM's epilogue, so no pass over the (..., out)
/// activation is left besides the GEMM's own output; GELU(h) is recomputed in the backward as in
/// gelu_linear, and gamma's gradient comes from the folded weight's (no activation is saved for
/// it). shortcut (..., out) and h (..., in) of one dtype (f32, f64 on the CPU; f32 or bf16);
/// weight (out, in), bias (out) or undefined, gamma (out): the activations' dtype, or f32 for
/// bf16 activations. One rounding of y in bf16. Gradients for all five.
Tensor gelu_linear_residual(const Tensor& shortcut, const Tensor& h, const Tensor& weight,
                            const Tensor& bias, const Tensor& gamma);

/// gamma * linear(gelu(h), weight, bias) with the layer scale folded into the weight, as
/// gelu_linear_residual without the shortcut: the ConvNeXt block's branch when drop path drops
/// whole samples (layers/drop_path.h add_scaled_samples then adds it to the shortcut in one pass).
/// Same shapes, dtypes and errors as gelu_linear_residual; gradients for all four.
Tensor gelu_linear_scaled(const Tensor& h, const Tensor& weight, const Tensor& bias,
                          const Tensor& gamma);

/// nn.Linear with timm's ConvNeXt init: weight ~ trunc_normal(std 0.02, [-2, 2]), bias = 0.
/// Tensors (state_dict names): "weight" (out, in); "bias" (out) when has_bias (no_weight_decay).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, Generator& gen, bool has_bias = true,
         DType dtype = DType::f32, Device device = Device::cpu);
  /// x (..., in_features) -> (..., out_features).
  Tensor forward(const Tensor& x) const { return linear(x, weight, bias); }
  void collect(const std::string& prefix, std::vector<ParamRef>& out) const override;

  int64_t in_features, out_features;
  Tensor weight;
  Tensor bias;  ///< undefined when constructed without bias
};

}  // namespace hg
