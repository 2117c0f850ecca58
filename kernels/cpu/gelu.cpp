// CPU GELU of kernels/gelu.h (exact erf form). double: std::erf / std::exp, the reference. float:
// our branch-free Phi / phi (kernels/cpu/normal_cdf.h, error bounds there), whose loops the compiler
// vectorises: 8 lanes on AVX2 machines (a clone of each loop is built for them and picked at load
// time), 4 with the baseline SSE2. Scalar erff + expf took 31% of a CPU training step.
#include "kernels/gelu.h"

#include <cmath>
#include <type_traits>

#include "kernels/cpu/normal_cdf.h"

// GCC and Clang: build an AVX2+FMA clone beside the baseline one, chosen at load time (ifunc).
// Not when the baseline has them already (-march=native on such a CPU, HAARGRAD_NATIVE): GCC then
// cannot inline normal_cdf_pdf (built for the whole native ISA) into the x86-64-v3 clone, and the
// clone, which the loader picks, runs a call per element: GELU 7x slower (measured, znver3).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !(defined(__AVX2__) && defined(__FMA__))
#define HG_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define HG_VECTOR_CLONES
#endif

namespace hg::kernels::cpu {
namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr int64_t kParallelMin = 65536;  // fewer elements: one thread is faster than waking others
constexpr int64_t kChunk = 16384;        // taken in turn, so a thread slowed by another process lags less

// One chunk each: the vectorised loops (cloned for AVX2 + FMA; OpenMP's outlined parallel body would
// not be, so the threads call these).
HG_VECTOR_CLONES __attribute__((noinline)) void gelu_forward_chunk(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    float cdf, pdf;
    normal_cdf_pdf(x[i], cdf, pdf);
    y[i] = x[i] * cdf;
  }
}

HG_VECTOR_CLONES __attribute__((noinline)) void gelu_backward_chunk(const float* x, const float* dy, float* dx,
                                                                     int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    float cdf, pdf;
    normal_cdf_pdf(x[i], cdf, pdf);
    dx[i] = dy[i] * (cdf + x[i] * pdf);
  }
}

HG_VECTOR_CLONES __attribute__((noinline)) void gelu_forward_backward_chunk(const float* x, const float* dy, float* y,
                                                                             float* dx, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    float cdf, pdf;
    normal_cdf_pdf(x[i], cdf, pdf);
    y[i] = x[i] * cdf;
    dx[i] = dy[i] * (cdf + x[i] * pdf);
  }
}

// Chunks of kChunk elements taken in turn by the threads (one thread below kParallelMin).
template <typename F>
void over_chunks(int64_t n, const F& chunk) {
#pragma omp parallel for schedule(dynamic, 1) if (n > kParallelMin)
  for (int64_t c = 0; c < n; c += kChunk) chunk(c, c + kChunk < n ? kChunk : n - c);
}

void gelu_forward_f32(const float* x, float* y, int64_t n) {
  over_chunks(n, [&](int64_t c, int64_t len) { gelu_forward_chunk(x + c, y + c, len); });
}

void gelu_backward_f32(const float* x, const float* dy, float* dx, int64_t n) {
  over_chunks(n, [&](int64_t c, int64_t len) { gelu_backward_chunk(x + c, dy + c, dx + c, len); });
}

void gelu_forward_backward_f32(const float* x, const float* dy, float* y, float* dx, int64_t n) {
  over_chunks(n, [&](int64_t c, int64_t len) { gelu_forward_backward_chunk(x + c, dy + c, y + c, dx + c, len); });
}

// Phi(v) and phi(v), the normal cdf and pdf that GELU's backward needs (exact erf / exp; the
// float path above has its own vectorised ones).
template <typename T>
struct CdfPdf {
  T cdf, pdf;
};
template <typename T>
CdfPdf<T> cdf_pdf(T v) {
  return {T(0.5) * (T(1) + std::erf(v * T(kInvSqrt2))), T(kInvSqrt2Pi) * std::exp(T(-0.5) * v * v)};
}

}  // namespace

template <typename T>
void gelu_forward(const T* x, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    gelu_forward_f32(x, y, n);
  } else {
#pragma omp parallel for if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) y[i] = T(0.5) * x[i] * (T(1) + std::erf(x[i] * T(kInvSqrt2)));
  }
}

template <typename T>
void gelu_backward(const T* x, const T* dy, T* dx, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    gelu_backward_f32(x, dy, dx, n);
  } else {
#pragma omp parallel for if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
      const CdfPdf<T> p = cdf_pdf(x[i]);
      dx[i] = dy[i] * (p.cdf + x[i] * p.pdf);
    }
  }
}

template <typename T>
void gelu_forward_backward(const T* x, const T* dy, T* y, T* dx, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    gelu_forward_backward_f32(x, dy, y, dx, n);
  } else {
#pragma omp parallel for if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
      const CdfPdf<T> p = cdf_pdf(x[i]);
      y[i] = x[i] * p.cdf;
      dx[i] = dy[i] * (p.cdf + x[i] * p.pdf);
    }
  }
}

template void gelu_forward_backward<float>(const float*, const float*, float*, float*, int64_t);
template void gelu_forward_backward<double>(const double*, const double*, double*, double*, int64_t);
template void gelu_forward<float>(const float*, float*, int64_t);
template void gelu_forward<double>(const double*, double*, int64_t);
template void gelu_backward<float>(const float*, const float*, float*, int64_t);
template void gelu_backward<double>(const double*, const double*, double*, int64_t);

}  // namespace hg::kernels::cpu
