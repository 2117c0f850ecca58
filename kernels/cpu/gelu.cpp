// CPU reference of kernels/gelu.h (exact erf GELU), computed in T (erff/expf for float: the
// double versions cost ~3x more and the result is rounded to float anyway; the f32 golden check holds).
#include "kernels/gelu.h"

#include <cmath>

namespace hg::kernels::cpu {
namespace {
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
}  // namespace

template <typename T>
void gelu_forward(const T* x, T* y, int64_t n) {
#pragma omp parallel for if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    y[i] = T(0.5) * v * (T(1) + std::erf(v * T(kInvSqrt2)));
  }
}

template <typename T>
void gelu_backward(const T* x, const T* dy, T* dx, int64_t n) {
#pragma omp parallel for if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    const T cdf = T(0.5) * (T(1) + std::erf(v * T(kInvSqrt2)));
    const T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * v * v);
    dx[i] = dy[i] * (cdf + v * pdf);
  }
}

template <typename T>
void gelu_forward_backward(const T* x, const T* dy, T* y, T* dx, int64_t n) {
#pragma omp parallel for if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    const T cdf = T(0.5) * (T(1) + std::erf(v * T(kInvSqrt2)));
    const T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * v * v);
    y[i] = v * cdf;
    dx[i] = dy[i] * (cdf + v * pdf);
  }
}

template void gelu_forward_backward<float>(const float*, const float*, float*, float*, int64_t);
template void gelu_forward_backward<double>(const double*, const double*, double*, double*, int64_t);
template void gelu_forward<float>(const float*, float*, int64_t);
template void gelu_forward<double>(const double*, double*, int64_t);
template void gelu_backward<float>(const float*, const float*, float*, int64_t);
template void gelu_backward<double>(const double*, const double*, double*, int64_t);

}  // namespace hg::kernels::cpu
