// Layer scale (timm ConvNeXt block "gamma"): y[r, c] = x[r, c] * gamma[c] over a dense (rows, C)
// array (NHWC activations: C is the last dim). Backward: dx = dy * gamma (the forward kernel
// again), dgamma[c] = sum_r dy[r, c] * x[r, c]. Outputs are OVERWRITTEN.
// CPU: T = float or double (dgamma summed in double); CUDA: float or bf16 activations, dgamma in
// float and deterministic (per-chunk partial sums, then a fixed-order reduction; no atomics).
// Errors: no shape checks (layers/layer_scale.cpp checks); the CUDA functions throw hg::Error on
// a failed launch (HG_CUDA_LAUNCH_CHECK) or workspace allocation, layer_scale_unfold for more
// than 2^31 - 1 rows, and all of them always in a build without CUDA.
//
// Folded into the linear layer before it (the ConvNeXt block's gamma * fc2(g)): gamma * (g W^T +
// b) = g (gamma W)^T + gamma b, so the scale costs one pass over the (out, in) weight instead of
// passes over the (rows, out) activation, and its gradient comes from the weight's:
//   fold:   wf[o, i] = gamma[o] w[o, i], bf[o] = gamma[o] b[o]
//   unfold: gw[o, i] = gamma[o] gwf[o, i], gb[o] = gamma[o] gbf[o],
//           dgamma[o] = sum_i gwf[o, i] w[o, i] + gbf[o] b[o]
// where gwf, gbf are the gradients of wf, bf. w, wf, gwf, gw are (out, in) row-major; b, bf, gbf,
// gb, gamma, dgamma are (out); b == nullptr means no bias (bf, gbf, gb then unused).
#pragma once

#include <cstdint>

namespace hg::kernels {
namespace cpu {
template <typename T>
void layer_scale_forward(const T* x, const T* gamma, T* y, int64_t rows, int64_t C);
template <typename T>
void layer_scale_grad_gamma(const T* x, const T* dy, T* dgamma, int64_t rows, int64_t C);
/// T = float or double for every array; dgamma summed in double.
template <typename T>
void layer_scale_fold(const T* w, const T* b, const T* gamma, T* wf, T* bf, int64_t out,
                      int64_t in);
template <typename T>
void layer_scale_unfold(const T* gwf, const T* gbf, const T* w, const T* b, const T* gamma, T* gw,
                        T* gb, T* dgamma, int64_t out, int64_t in);
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
/// w, b, gamma and the unfolded gradients f32 (the master parameters); wf, bf, gwf, gbf in T =
/// float or hg::bf16 (the compute copy: wf, bf rounded once). dgamma: one block per row, summed in
/// a fixed order (deterministic).
template <typename T>
void layer_scale_fold(const float* w, const float* b, const float* gamma, T* wf, T* bf, int64_t out,
                      int64_t in);
template <typename T>
void layer_scale_unfold(const T* gwf, const T* gbf, const float* w, const float* b,
                        const float* gamma, float* gw, float* gb, float* dgamma, int64_t out,
                        int64_t in);
}  // namespace cuda
}  // namespace hg::kernels
