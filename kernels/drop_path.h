// Per-sample scaling, the kernel of DropPath (timm stochastic depth): y[n, i] = x[n, i] * scale[n].
// The caller draws scale[n] = keep ? 1/keep_prob : 0 on the host (layers/drop_path.cpp). The same
// kernel is the backward (dx = dy * scale). add_scaled_rows is the residual add of a dropped
// branch in the same pass: y[n, i] = x[n, i] + z[n, i] * scale[n] (its backward: dx = dy, dz =
// scale_rows(dy)). Shapes: x, z, y (N, inner) dense; scale (N). Outputs are OVERWRITTEN (y may
// alias x or z). CPU: T = float or double; CUDA: float or hg::bf16 storage, float scale and math,
// one rounding per output. Errors: none on the CPU (the callers check shapes and dtypes); the
// CUDA functions throw hg::Error on a failed launch, and always in a build without CUDA.
#pragma once

#include <cstdint>

namespace hg::kernels {
namespace cpu {
template <typename T>
void scale_rows(const T* x, const T* scale, T* y, int64_t N, int64_t inner);
template <typename T>
void add_scaled_rows(const T* x, const T* z, const T* scale, T* y, int64_t N, int64_t inner);
}  // namespace cpu
// CUDA entry points: declared in every build; a build without CUDA links kernels/nocuda/ stubs
// that throw "built without CUDA".
namespace cuda {
/// T = float or hg::bf16 (x, y); scale is float; math in float.
template <typename T>
void scale_rows(const T* x, const float* scale, T* y, int64_t N, int64_t inner);
template <typename T>
void add_scaled_rows(const T* x, const T* z, const float* scale, T* y, int64_t N, int64_t inner);
}  // namespace cuda
}  // namespace hg::kernels
