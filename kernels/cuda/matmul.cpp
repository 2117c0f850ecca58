// cuBLAS GEMM for kernels/matmul.h. Row-major C = op(A) op(B) is computed as column-major
// C^T = op(B)^T op(A)^T, i.e. the cuBLAS call with the operands swapped.
#include "kernels/cuda/check.h"
#include "kernels/cuda/context.h"
#include "kernels/matmul.h"

namespace hg::kernels::cuda {

template <>
void gemm<float>(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 const float* B, float beta, float* C) {
  if (M == 0 || N == 0) return;
  const int lda = static_cast<int>(ta ? M : K), ldb = static_cast<int>(tb ? K : N);
  HG_CUBLAS_CHECK(cublasSgemm(hg::cuda::cublas(), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                              static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &alpha, B, ldb,
                              A, lda, &beta, C, static_cast<int>(N)));
}

template <>
void gemm<hg::bf16>(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const hg::bf16* A,
                    const hg::bf16* B, float beta, hg::bf16* C) {
  if (M == 0 || N == 0) return;
  const int lda = static_cast<int>(ta ? M : K), ldb = static_cast<int>(tb ? K : N);
  HG_CUBLAS_CHECK(cublasGemmEx(hg::cuda::cublas(), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                               static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &alpha, B,
                               CUDA_R_16BF, ldb, A, CUDA_R_16BF, lda, &beta, C, CUDA_R_16BF,
                               static_cast<int>(N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void gemm_f32_out(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const hg::bf16* A,
                  const hg::bf16* B, float beta, float* C) {
  if (M == 0 || N == 0) return;
  const int lda = static_cast<int>(ta ? M : K), ldb = static_cast<int>(tb ? K : N);
  HG_CUBLAS_CHECK(cublasGemmEx(hg::cuda::cublas(), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                               static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &alpha, B,
                               CUDA_R_16BF, ldb, A, CUDA_R_16BF, lda, &beta, C, CUDA_R_32F,
                               static_cast<int>(N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace hg::kernels::cuda
