// Global average pooling over H and W of an NHWC activation (timm's head: x.mean((1, 2)) in NHWC).
// Layouts (dense): x (N, H, W, C) -> y (N, C), y[n, c] = (1 / (H*W)) * sum over h, w of x[n, h, w,
// c]. Backward: grad_x[n, h, w, c] = grad_y[n, c] / (H*W). Outputs are OVERWRITTEN. dtype: CPU
// float or double (accumulation in T); CUDA float (accumulation in float; the kernels are templated
// on the storage type for bf16 later). Shapes are validated by layers/pool.cpp.
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
