// CPU GEMM: OpenBLAS when available (the speed path), plain loops as the oracle.
#include "kernels/matmul.h"

#include <algorithm>
#include <mutex>

#include "core/threads.h"

#ifdef HAARGRAD_WITH_BLAS
#include <cblas.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

// One thread pool: OpenBLAS runs on the calling thread (core/threads.h sets it to one thread at
// start-up; its own pool busy-waits between calls and, beside our OpenMP threads on the same cores,
// oversubscribed them: measured on 2 cores, 60% of the time spinning, training 2.5x slower). So a
// large GEMM is cut here into blocks of rows (or columns) of C that the OpenMP threads take in turn.

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

namespace {

// One block of C: rows [m0, m1) and columns [n0, n1) of the full product (ldc = N).
template <typename T>
void gemm_block(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, const T* B, T beta, T* C,
                int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  const T* a = ta ? A + m0 : A + m0 * K;  // op(A) rows m0..: columns of a stored (K, M) A
  const T* b = tb ? B + n0 * K : B + n0;  // op(B) columns n0..: rows of a stored (N, K) B
  T* c = C + m0 * N + n0;
  const int64_t m = m1 - m0, n = n1 - n0;
#ifdef HAARGRAD_WITH_BLAS
  const auto opa = ta ? CblasTrans : CblasNoTrans, opb = tb ? CblasTrans : CblasNoTrans;
  const int lda = static_cast<int>(ta ? M : K), ldb = static_cast<int>(tb ? K : N);
  if constexpr (sizeof(T) == 4)
    cblas_sgemm(CblasRowMajor, opa, opb, (int)m, (int)n, (int)K, alpha, a, lda, b, ldb, beta, c, (int)N);
  else
    cblas_dgemm(CblasRowMajor, opa, opb, (int)m, (int)n, (int)K, alpha, a, lda, b, ldb, beta, c, (int)N);
#else
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += (ta ? a[k * M + i] : a[i * K + k]) * (tb ? b[j * K + k] : b[k * N + j]);
      c[i * N + j] = alpha * acc + (beta == T(0) ? T(0) : beta * c[i * N + j]);
    }
#endif
}

}  // namespace

template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, const T* B,
          T beta, T* C) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // C = beta * C (BLAS may not accept K = 0)
    for (int64_t i = 0; i < M * N; ++i) C[i] = beta == T(0) ? T(0) : beta * C[i];
    return;
  }
  static std::once_flag blas_confined;  // also when no program start-up ran (tests, libraries)
  std::call_once(blas_confined, confine_blas_threads);
  // The blocks follow the threads the work is split for (set_cpu_threads), not the threads running
  // now (fewer while ThreadTuner sees other processes on the cores): same blocks, same rounding.
  int split = 1, threads = 1;
#ifdef _OPENMP
  if (!omp_in_parallel()) {
    split = cpu_split_threads();
    threads = std::min(omp_get_max_threads(), split);
  }
#endif
  // Below ~2 MFLOP a block's start-up costs more than it saves. Blocks are whole rows of C when M
  // is large enough (each thread streams its own rows of A and C), else whole columns; 4 blocks per
  // thread taken dynamically, so a thread slowed by another process does not hold up the rest.
  const bool parallel = split > 1 && M * N * K >= (int64_t(1) << 20);
  if (!parallel) {
    gemm_block(ta, tb, M, N, K, alpha, A, B, beta, C, 0, M, 0, N);
    return;
  }
  const bool by_rows = M >= N || M >= 64 * split;
  const int64_t extent = by_rows ? M : N;
  const int64_t min_block = 16;
  const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(4 * split, extent / min_block));
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int64_t i = 0; i < blocks; ++i) {
    const int64_t lo = extent * i / blocks, hi = extent * (i + 1) / blocks;
    if (by_rows)
      gemm_block(ta, tb, M, N, K, alpha, A, B, beta, C, lo, hi, 0, N);
    else
      gemm_block(ta, tb, M, N, K, alpha, A, B, beta, C, 0, M, lo, hi);
  }
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, const float*, float, float*);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, const double*, double, double*);
template void gemm_reference<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, const float*, float, float*);
template void gemm_reference<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, const double*, double, double*);

}  // namespace hg::kernels::cpu
