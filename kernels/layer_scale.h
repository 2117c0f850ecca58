// Layer scale (timm ConvNeXt block "gamma"): y[r, c] = x[r, c] * gamma[c] over a dense (rows, C)
// array (NHWC activations: C is the last dim). Backward: dx = dy * gamma (the forward kernel
// again), dgamma[c] = sum_r dy[r, c] * x[r, c]. Outputs are OVERWRITTEN.
// CPU: T = float or double (dgamma summed in double); CUDA: float, dgamma deterministic
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
#ifdef HAARGRAD_WITH_CUDA
namespace cuda {
void layer_scale_forward(const float* x, const float* gamma, float* y, int64_t rows, int64_t C);
void layer_scale_grad_gamma(const float* x, const float* dy, float* dgamma, int64_t rows,
                            int64_t C);
}  // namespace cuda
#endif
}  // namespace hg::kernels
