// GELU, exact erf form (torch.nn.GELU(approximate='none'), used by timm's ConvNeXt Mlp):
//   y = x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2))),
//   dy/dx = Phi(x) + x * phi(x), phi(x) = exp(-x^2/2) / sqrt(2*pi).
// Dense arrays of n elements; dx is OVERWRITTEN. CPU: T = float or double; CUDA: float or bf16
// storage, float math. Errors: no checks (the callers, layers/activation.cpp and
// layers/linear.cpp, pass arrays of n elements); the CUDA functions throw hg::Error on a failed
// launch (HG_CUDA_LAUNCH_CHECK), and always in a build without CUDA.
#pragma once

#include <cstdint>

namespace hg::kernels {
namespace cpu {
template <typename T>
void gelu_forward(const T* x, T* y, int64_t n);
template <typename T>
void gelu_backward(const T* x, const T* dy, T* dx, int64_t n);
/// Both at once from one erf and one exp: y = GELU(x) and dx = dy * GELU'(x) (the recompute in
/// the backward of layers' gelu_linear). y and dx are OVERWRITTEN.
template <typename T>
void gelu_forward_backward(const T* x, const T* dy, T* y, T* dx, int64_t n);
}  // namespace cpu
// CUDA entry points: declared in every build; a build without CUDA links kernels/nocuda/ stubs
// that throw "built without CUDA".
namespace cuda {  // T = float or hg::bf16 storage, float math
template <typename T> void gelu_forward(const T* x, T* y, int64_t n);
template <typename T> void gelu_backward(const T* x, const T* dy, T* dx, int64_t n);
template <typename T> void gelu_forward_backward(const T* x, const T* dy, T* y, T* dx, int64_t n);
}  // namespace cuda
}  // namespace hg::kernels
