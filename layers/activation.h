// GELU activation with autograd (exact erf form, torch.nn.GELU() default, as in timm's ConvNeXt
// Mlp).
#pragma once

#include "core/tensor.h"

namespace hg {

/// y = 0.5 * x * (1 + erf(x / sqrt(2))), elementwise; any shape. dtype: CPU f32/f64, CUDA f32, and
/// bf16 (CPU, CUDA: f32 arithmetic, bf16 storage). Throws hg::Error for other dtypes.
Tensor gelu(const Tensor& x);

}  // namespace hg
