// LayerNorm over the last dimension, with autograd, and the LayerNorm module (timm names).
//
// With NHWC activations this one op is both timm's nn.LayerNorm inside ConvNeXt blocks and
// LayerNorm2d (stem, downsample, head), which normalise the channel dim.
// Formula (torch.nn.functional.layer_norm, biased variance): see kernels/layernorm.h.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "layers/module.h"

namespace hg {

/// y = (x - mean) / sqrt(var + eps) * weight + bias over the last dim of x (any rank >= 1).
/// x (..., C); weight, bias (C); y like x (contiguous). dtype: CPU f32/f64, CUDA f32, one for all
/// three; or bf16 x (CPU, CUDA) with f32 weight and bias, y bf16, statistics in f32
/// (layers/dispatch.h); all on one device. Gradients for x, weight and bias.
/// Throws hg::Error ("layer_norm: ...", naming the shapes) on a shape / dtype / device mismatch.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-6);

/// timm LayerNorm / LayerNorm2d(C, eps) on channels-last input: parameters "weight" (ones) and
/// "bias" (zeros), both no_weight_decay.
class LayerNorm : public Module {
 public:
  LayerNorm(int64_t channels, double eps = 1e-6, DType dtype = DType::f32,
            Device device = Device::cpu);
  Tensor forward(const Tensor& x) const { return layer_norm(x, weight, bias, eps); }
  void collect(const std::string& prefix, std::vector<ParamRef>& out) const override;

  Tensor weight, bias;  ///< (C) each
  double eps;
};

}  // namespace hg
