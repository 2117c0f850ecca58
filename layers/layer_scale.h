// Residual-branch ops of a ConvNeXt block with autograd: layer scale (timm's `gamma`, multiplied
// over the channel dim of NHWC activations) and the residual add.
#pragma once

#include "core/tensor.h"

namespace hg {

/// y = x * gamma, gamma broadcast over the last dim. x (..., C), gamma (C), same device; one dtype
/// (CPU f32/f64, CUDA f32), or bf16 x (CPU, CUDA) with f32 gamma (layers/dispatch.h). Gradients for
/// x and gamma. Throws hg::Error ("layer_scale: ...") on a shape / dtype / device mismatch.
Tensor layer_scale(const Tensor& x, const Tensor& gamma);

/// Fused `shortcut + gamma * h` (layer scale then residual add, the end of a ConvNeXt block) in one
/// pass: the scaled branch is never materialised and the backward saves only h and gamma, one
/// activation fewer per block than layer_scale + residual_add. Shapes as layer_scale; shortcut and
/// h the same shape. Gradients: d shortcut = dy, dh = dy * gamma, dgamma[c] = sum_r dy * h.
Tensor residual_layer_scale(const Tensor& shortcut, const Tensor& h, const Tensor& gamma);

/// shortcut + branch (same shape, dtype, device): the residual stream of a block. Both inputs get
/// dL/dy as gradient. Throws hg::Error ("residual_add: ...") on a mismatch.
Tensor residual_add(const Tensor& shortcut, const Tensor& branch);

}  // namespace hg
