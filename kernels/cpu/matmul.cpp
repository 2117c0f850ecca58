// CPU GEMM: OpenBLAS when available (the speed path), plain loops as the oracle.
#include "kernels/matmul.h"

#ifdef HAARGRAD_WITH_BLAS
#include <cblas.h>

#include <mutex>

// OpenBLAS's own thread pool busy-waits between calls; beside our OpenMP loops on the same cores it
// oversubscribes them (measured on 2 cores: 60% of the time spent spinning, training 2.5x slower).
// Our CPU kernels parallelise with OpenMP, so BLAS runs on the calling thread. Weak: other BLAS
// libraries lack this function, and then nothing is called.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));
#endif

namespace hg::kernels::cpu {

template <typename T>
void gemm_reference(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                    const T* B, T beta, T* C) {
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      T acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        T a = ta ? A[k * M + m] : A[m * K + k];
        T b = tb ? B[n * K + k] : B[k * N + n];
        acc += a * b;
      }
      C[m * N + n] = alpha * acc + (beta == T(0) ? T(0) : beta * C[m * N + n]);
    }
  }
}

template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, const T* B,
          T beta, T* C) {
  if (M == 0 || N == 0) return;
#ifdef HAARGRAD_WITH_BLAS
  static std::once_flag single_threaded;
  std::call_once(single_threaded, [] {
    if (openblas_set_num_threads) openblas_set_num_threads(1);
  });
  if (K > 0) {
    const auto opa = ta ? CblasTrans : CblasNoTrans, opb = tb ? CblasTrans : CblasNoTrans;
    const int lda = static_cast<int>(ta ? M : K), ldb = static_cast<int>(tb ? K : N);
    if constexpr (sizeof(T) == 4)
      cblas_sgemm(CblasRowMajor, opa, opb, (int)M, (int)N, (int)K, alpha, A, lda, B, ldb, beta, C, (int)N);
    else
      cblas_dgemm(CblasRowMajor, opa, opb, (int)M, (int)N, (int)K, alpha, A, lda, B, ldb, beta, C, (int)N);
    return;
  }
#endif
  gemm_reference(ta, tb, M, N, K, alpha, A, B, beta, C);
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, const float*, float, float*);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, const double*, double, double*);
template void gemm_reference<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, const float*, float, float*);
template void gemm_reference<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, const double*, double, double*);

}  // namespace hg::kernels::cpu
