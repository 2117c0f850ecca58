// The shape check of a WTConv2d kernel call (kernels/wtconv.h), one for every backend: the CPU
// (kernels/cpu/wtconv_dispatch.cpp) and CUDA (kernels/cuda/wtconv_fused.cu) entry points call it,
// so both accept exactly the same shapes. What differs per backend stays there: dtypes, devices,
// contiguity, and the CUDA kernels' limits (largest K and level count, int32 sizes).
// Includes only kernels/wtconv.h (core/tensor.h), so .cu files (C++17) may include it.
#pragma once

#include "kernels/wtconv.h"

namespace hg::kernels {

/// Checks the shapes of one WTConv2d call and returns K, the kernel size:
///   x                  defined, (B, H, W, C) with every size >= 1
///   stride             >= 1
///   base_weight        (C, 1, K, K), K odd (1, 3, 5, ...)
///   base_bias          (C)
///   base_scale         (1, C, 1, 1)
///   wavelet_weight[l]  (4C, 1, K, K), l = 0..L-1, at least one level (L >= 1, as the layer and
///                      the model configs require: a WTConv without levels is a plain depthwise
///                      conv, which the models build as such)
///   wavelet_scale[l]   (1, 4C, 1, 1), as many as wavelet_weight
/// Throws hg::Error that starts with `op` (e.g. "wtconv_forward") and names the offending tensor,
/// the shape it must have and the shape it has ("undefined" for an undefined tensor).
int wtconv_check_shapes(const char* op, const Tensor& x, const WTConvWeights& w, int stride);

/// Checks that grad_y is defined and has the output shape of the call (B, ceil(H / stride),
/// ceil(W / stride), C); x and stride as accepted by wtconv_check_shapes. Throws hg::Error naming
/// `op`, grad_y, the expected and the actual shape.
void wtconv_check_grad_y(const char* op, const Tensor& x, const Tensor& grad_y, int stride);

/// Checks a WTConvSaved passed to a call in `mode` (none: nothing to check): only the reference
/// mode takes one; for the backward (`filled`) it must hold `levels` levels of coefficient-shaped
/// tensors (B, ceil(h_l / 2), ceil(w_l / 2), 4C) and base (B, H, W, C) of x, all dense, of dtype
/// `dtype` (the reference mode's intermediates) on x's device. Throws hg::Error naming `op`, the
/// tensor, the expected and the actual shape or dtype.
void wtconv_check_saved(const char* op, const Tensor& x, int levels, WTConvMode mode,
                        const WTConvSaved* saved, bool filled, DType dtype);

}  // namespace hg::kernels
