// Fully connected layer kernels: y = x @ weight^T + bias over the last dim, x viewed as a matrix of
// M rows (every leading dim flattened). Also the row-bias helpers that Conv2d shares (an NHWC
// activation is an (N*H*W, C) matrix, so a per-channel bias is a per-column bias).
//
// Layouts (dense, row-major): x (M, in), weight (out, in) (PyTorch layout), bias (out) or nullptr,
// y (M, out). Gradients: grad_x (M, in), grad_weight (out, in), grad_bias (out).
// Every output buffer is OVERWRITTEN. Bias gradients are deterministic (fixed summation order).
// dtype: CPU float or double (accumulation in T); CUDA float or bf16 storage with float
// accumulation. Shapes are validated by the layer (layers/linear.cpp). Errors: none on the CPU; the
// CUDA functions throw hg::Error for a failed launch or a cuBLAS(Lt) status that is not success,
// and always in a build without CUDA.
#pragma once

#include <cstdint>

namespace hg::kernels {
namespace cpu {
/// Fast path: one GEMM (kernels::cpu::gemm) after filling y with the bias rows.
template <typename T>
void linear_forward(int64_t M, int64_t in, int64_t out, const T* x, const T* weight, const T* bias,
                    T* y);
template <typename T>
void linear_backward_input(int64_t M, int64_t in, int64_t out, const T* grad_y, const T* weight,
                           T* grad_x);
template <typename T>
void linear_backward_weight(int64_t M, int64_t in, int64_t out, const T* x, const T* grad_y,
                            T* grad_weight);
/// The oracle: plain loops.
template <typename T>
void linear_forward_reference(int64_t M, int64_t in, int64_t out, const T* x, const T* weight,
                              const T* bias, T* y);

/// y[m, c] += bias[c] for a (rows, cols) matrix.
template <typename T>
void add_bias_rows(int64_t rows, int64_t cols, const T* bias, T* y);
/// grad_bias[c] = sum over m of grad_y[m, c] (summed in row order).
template <typename T>
void bias_grad_rows(int64_t rows, int64_t cols, const T* grad_y, T* grad_bias);
}  // namespace cpu

// CUDA entry points: declared in every build; a build without CUDA links kernels/nocuda/ stubs
// that throw "built without CUDA".
namespace cuda {
/// cuBLAS (kernels::cuda::gemm) plus the bias kernels below. All pointers on the GPU.
/// T = float or hg::bf16 (storage; accumulation in float).
template <typename T>
void linear_forward(int64_t M, int64_t in, int64_t out, const T* x, const T* weight, const T* bias,
                    T* y);
/// y = x @ weight^T + bias + shortcut, shortcut (M, out) like y: the residual add read by the
/// GEMM's epilogue (cuBLASLt, one rounding), else the GEMM accumulating onto a copy of shortcut.
/// shortcut must not overlap y.
template <typename T>
void linear_forward_add(int64_t M, int64_t in, int64_t out, const T* x, const T* weight,
                        const T* bias, const T* shortcut, T* y);
template <typename T>
void linear_backward_input(int64_t M, int64_t in, int64_t out, const T* grad_y, const T* weight,
                           T* grad_x);
template <typename T>
void linear_backward_weight(int64_t M, int64_t in, int64_t out, const T* x, const T* grad_y,
                            T* grad_weight);
/// Both parameter gradients: grad_weight (out, in) and grad_bias (out) = the column sums of grad_y,
/// computed by the weight-gradient GEMM's epilogue while it reads grad_y (cuBLASLt BGRADB) for bf16
/// where cuBLASLt offers it, else by the GEMM and bias_grad_rows. Deterministic either way.
template <typename T>
void linear_backward_weight_bias(int64_t M, int64_t in, int64_t out, const T* x, const T* grad_y,
                                 T* grad_weight, T* grad_bias);
/// y[m, c] += bias[c]. (B, T) = (float, float), (bf16, bf16) or (float, bf16): an f32 bias on
/// bf16 activations (convolutions keep their f32 parameters).
template <typename B, typename T>
void add_bias_rows(int64_t rows, int64_t cols, const B* bias, T* y);
/// grad_bias[c] = sum over m of grad_y[m, c]: per-chunk partial sums in workspace, then a
/// fixed-order sum of the chunks (deterministic, no atomics). (T, G) = (float, float),
/// (bf16, bf16) or (bf16, float).
template <typename T, typename G>
void bias_grad_rows(int64_t rows, int64_t cols, const T* grad_y, G* grad_bias);
}  // namespace cuda
}  // namespace hg::kernels
