// Elementwise kernels on dense arrays of n elements. CPU: T = float or double. CUDA: float or bf16
// storage with float math. Outputs are overwritten unless "_acc". Errors: no checks (the callers,
// core/ops.cpp, check shapes); the CUDA functions throw hg::Error on a failed launch
// (HG_CUDA_LAUNCH_CHECK), and always in a build without CUDA.
#pragma once

#include <cstdint>

namespace hg::kernels {
namespace cpu {
template <typename T> void add(const T* a, const T* b, T* out, int64_t n);     ///< out = a + b
template <typename T> void sub(const T* a, const T* b, T* out, int64_t n);     ///< out = a - b
template <typename T> void mul(const T* a, const T* b, T* out, int64_t n);     ///< out = a * b
template <typename T> void scale(const T* a, T s, T* out, int64_t n);          ///< out = s * a
template <typename T> void axpy(T alpha, const T* x, T* y, int64_t n);         ///< y += alpha * x
}  // namespace cpu
// CUDA entry points: declared in every build; a build without CUDA links kernels/nocuda/ stubs
// that throw "built without CUDA".
namespace cuda {  // T = float or hg::bf16 (storage); math in float
template <typename T> void add(const T* a, const T* b, T* out, int64_t n);
template <typename T> void sub(const T* a, const T* b, T* out, int64_t n);
template <typename T> void mul(const T* a, const T* b, T* out, int64_t n);
template <typename T> void scale(const T* a, float s, T* out, int64_t n);
template <typename T> void axpy(float alpha, const T* x, T* y, int64_t n);
}  // namespace cuda
}  // namespace hg::kernels
