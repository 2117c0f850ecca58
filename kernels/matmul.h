// Row-major GEMM: C = alpha * op(A) @ op(B) + beta * C, with op(X) = X or X^T.
// Shapes: op(A) is (M, K), op(B) is (K, N), C is (M, N); A is stored (M, K) or, transposed, (K, M).
// CPU: an OpenBLAS sgemm/dgemm when haargrad is built with BLAS, else (and always in
// gemm_reference) three plain loops with the accumulation in T; the reference is the test oracle.
// CUDA: cuBLAS (kernels/cuda/matmul.cpp), fp32 accumulate; TF32 only when allowed by precision.
// Errors: the CPU functions check nothing (the callers check shapes); the CUDA ones throw
// hg::Error on a cuBLAS failure (HG_CUBLAS_CHECK) and, in a build without CUDA, always.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace hg::kernels {
namespace cpu {
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          const T* B, T beta, T* C);
template <typename T>
void gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha,
                    const T* A, const T* B, T beta, T* C);
}  // namespace cpu
// CUDA entry points: declared in every build; a build without CUDA links kernels/nocuda/ stubs
// that throw "built without CUDA".
namespace cuda {
/// T = float (cublasSgemm; TF32 when allowed) or hg::bf16 (bf16 A, B, C with f32 accumulation,
/// cublasGemmEx). alpha and beta are float for both.
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const T* A,
          const T* B, float beta, T* C);
/// bf16 A and B, f32 C (f32 accumulation): weight gradients that stay in f32.
void gemm_f32_out(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  const hg::bf16* A, const hg::bf16* B, float beta, float* C);
}  // namespace cuda
}  // namespace hg::kernels
