// LayerNorm over the last dimension of a dense (rows, C) array: the kernel behind layers/norm.h
// (timm's LayerNorm in ConvNeXt blocks and LayerNorm2d in stem/downsample/head, which with NHWC
// activations both normalise the last dim).
//
// Formula (torch.nn.functional.layer_norm): mean = sum(x)/C, var = sum((x-mean)^2)/C (biased),
// rstd = 1/sqrt(var + eps), xhat = (x-mean)*rstd, y = xhat*weight + bias.
// Backward (standard LayerNorm derivation): with g = dy*weight,
//   dx = rstd * (g - mean_c(g) - xhat * mean_c(g*xhat)),  dweight = sum_rows(dy*xhat),
//   dbias = sum_rows(dy).
// Gradient rule: dx, dweight, dbias are OVERWRITTEN (the layer accumulates into parameters).
// Shapes: x, y, dy, dx (rows, C); weight, bias, dweight, dbias (C); mean, rstd (rows).
// dtypes: CPU T = float or double, with the row statistics accumulated in double (the oracle);
// CUDA: x, y, dy, dx float or hg::bf16 storage; weight, bias, their gradients and mean/rstd float;
// accumulation float. dweight / dbias on CUDA are deterministic (per-chunk partial sums, then a
// fixed-order reduction; no atomics).
// Errors: no checks here (layers/norm.cpp checks shapes and dtypes); the CUDA functions throw
// hg::Error on a failed launch (HG_CUDA_LAUNCH_CHECK) or workspace allocation, and always in a
// build without CUDA.
#pragma once

#include <cstdint>

namespace hg::kernels {
namespace cpu {
template <typename T>
void layernorm_forward(const T* x, const T* weight, const T* bias, T* y, T* mean, T* rstd,
                       int64_t rows, int64_t C, double eps);
/// dx may be null (not needed); dweight / dbias may be null.
template <typename T>
void layernorm_backward(const T* x, const T* weight, const T* mean, const T* rstd, const T* dy,
                        T* dx, T* dweight, T* dbias, int64_t rows, int64_t C);
}  // namespace cpu
// CUDA entry points: declared in every build; a build without CUDA links kernels/nocuda/ stubs
// that throw "built without CUDA".
namespace cuda {
/// T (x, y, dy, dx) = float or hg::bf16; weight, bias, statistics and their gradients are float
/// (f32 master parameters are read directly in mixed precision), accumulation in float.
template <typename T>
void layernorm_forward(const T* x, const float* weight, const float* bias, T* y, float* mean,
                       float* rstd, int64_t rows, int64_t C, float eps);
template <typename T>
void layernorm_backward(const T* x, const float* weight, const float* mean, const float* rstd,
                        const T* dy, T* dx, float* dweight, float* dbias, int64_t rows, int64_t C);
}  // namespace cuda
}  // namespace hg::kernels
