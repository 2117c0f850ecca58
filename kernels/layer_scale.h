// Layer scale (timm ConvNeXt block "gamma"): y[r, c] = x[r, c] * gamma[c] over a dense (rows, C)
// array (NHWC activations: C is the last dim). Backward: dx = dy * gamma (the forward kernel
// again), dgamma[c] = sum_r dy[r, c] * x[r, c]. Outputs are OVERWRITTEN.
// CPU: T = float or double (dgamma summed in double); CUDA: float or bf16 activations, dgamma in float and deterministic
// (per-chunk partial sums, then a fixed-order reduction; no atomics).
#pragma once

#include <cstdint>

namespace hg::kernels {
namespace cpu {
template <typename T>
void layer_scale_forward(const T* x, const T* gamma, T* y, int64_t rows, int64_t C);
template <typename T>
void layer_scale_grad_gamma(const T* x, const T* dy, T* dgamma, int64_t rows, int64_t C);
}  // namespace cpu
// CUDA entry points: declared in every build; a build without CUDA links kernels/nocuda/ stubs
// that throw "built without CUDA".
namespace cuda {
/// T (x, y, dy) = float or hg::bf16; gamma and dgamma float (the f32 master parameter, read as it
/// is in mixed precision), math in float.
template <typename T>
void layer_scale_forward(const T* x, const float* gamma, T* y, int64_t rows, int64_t C);
/// y = shortcut + x * gamma in one pass (one rounding for bf16): the ConvNeXt block's end.
template <typename T>
void residual_layer_scale_forward(const T* shortcut, const T* x, const float* gamma, T* y,
                                  int64_t rows, int64_t C);
template <typename T>
void layer_scale_grad_gamma(const T* x, const T* dy, float* dgamma, int64_t rows, int64_t C);
}  // namespace cuda
}  // namespace hg::kernels
