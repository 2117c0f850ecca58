// Global average pooling over H and W of an NHWC activation (timm's head: x.mean((1, 2)) in NHWC).
// Layouts (dense): x (N, H, W, C) -> y (N, C), y[n, c] = (1 / (H*W)) * sum over h, w of x[n, h, w,
// c]. Backward: grad_x[n, h, w, c] = grad_y[n, c] / (H*W). Outputs are OVERWRITTEN. dtype: CPU
// float or double (accumulation in T); CUDA float or hg::bf16 storage (accumulation in float, one
// rounding per output). Shapes are validated by layers/pool.cpp. Errors: none on the CPU; the
// CUDA functions throw hg::Error on a failed launch (HG_CUDA_LAUNCH_CHECK), and always in a build
// without CUDA.
#pragma once

#include <cstdint>

namespace hg::kernels {
namespace cpu {
template <typename T>
void global_avg_pool_forward(int64_t N, int64_t HW, int64_t C, const T* x, T* y);
template <typename T>
void global_avg_pool_backward(int64_t N, int64_t HW, int64_t C, const T* grad_y, T* grad_x);
}  // namespace cpu
// CUDA entry points: declared in every build; a build without CUDA links kernels/nocuda/ stubs
// that throw "built without CUDA".
namespace cuda {  // T = float or hg::bf16 storage, float accumulation
template <typename T>
void global_avg_pool_forward(int64_t N, int64_t HW, int64_t C, const T* x, T* y);
template <typename T>
void global_avg_pool_backward(int64_t N, int64_t HW, int64_t C, const T* grad_y, T* grad_x);
}  // namespace cuda
}  // namespace hg::kernels
