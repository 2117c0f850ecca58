// GEMMs through cuBLASLt, with the bias add, or the bias gradient, fused into their epilogue
// (CUDA-only, used by kernels/cuda/linear.cu). Row-major, as kernels/matmul.h:
//   C (M, N) = op(A) (M, K) @ op(B) (K, N) + bias (N, broadcast over the M rows).
// The bias is added to the f32 accumulator before C is stored, so C is written once instead of
// written, read and written again by a separate bias kernel (for ConvNeXt's fc1 that second pass
// moves as many bytes as the GEMM's own output).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace hg::kernels::cuda {

/// C = op(A) op(B) alone, through cuBLASLt so that the algorithm is chosen as for the others
/// (hg::cuda::gemm_autotune: timed on the shape's first call). Same types and return value as
/// gemm_bias (false: nothing done, the caller runs kernels/matmul.h's gemm).
template <typename T>
bool gemm_plain(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, const T* B,
                T* C);

/// T = float (TF32 tensor cores only when hg::cuda::allow_tf32()) or hg::bf16 (bf16 A, B, C and
/// bias, f32 accumulation). Returns false, having done nothing, when cuBLASLt offers no algorithm
/// for this shape and these pointer alignments (the caller then runs gemm + its bias kernel).
/// Throws hg::Error on a cuBLASLt failure. The algorithm: hg::cuda::gemm_autotune
/// (kernels/cuda/context.h).
template <typename T>
bool gemm_bias(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, const T* B,
               const T* bias, T* C);

/// gemm_bias plus an addend R of C's shape (M, N), dense row-major, read by the epilogue
/// (cuBLASLt's beta = 1 input): C = op(A) op(B) + bias + R, rounded once. R may not alias C's
/// memory partly (equal pointers are allowed). For a residual block that ends in a linear layer,
/// the shortcut add costs the GEMM one read of R instead of a separate pass that reads two tensors
/// and writes one. Same alignment rule and return value as gemm_bias.
template <typename T>
bool gemm_bias_add(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A,
                   const T* B, const T* bias, const T* addend, T* C);

/// The weight-gradient product with the bias gradient in the same pass (cuBLASLt's BGRADB
/// epilogue): C (M, N) = A^T B for A (K, M), B (K, N) row-major, and grad_bias[m] = sum over k of
/// A[k, m] (the column sums of A, length M), reduced by cuBLASLt while it reads A instead of by a
/// second pass over it. For a linear layer: A = grad_y (rows, out), B = x (rows, in), C =
/// grad_weight. T = hg::bf16 only (the one type measured faster with it); alignment rule and return
/// value as gemm_bias (false: nothing done, the caller runs the GEMM and its column-sum kernel).
/// Deterministic: cuBLASLt's reductions use no atomics.
template <typename T>
bool gemm_bias_grad(int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C, T* grad_bias);

}  // namespace hg::kernels::cuda
