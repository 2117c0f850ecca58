// CPU reference of kernels/gelu.h (exact erf GELU), computed in double.
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
    const double v = x[i];
    y[i] = static_cast<T>(0.5 * v * (1.0 + std::erf(v * kInvSqrt2)));
  }
}

template <typename T>
void gelu_backward(const T* x, const T* dy, T* dx, int64_t n) {
#pragma omp parallel for if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    const double cdf = 0.5 * (1.0 + std::erf(v * kInvSqrt2));
    const double pdf = kInvSqrt2Pi * std::exp(-0.5 * v * v);
    dx[i] = static_cast<T>(dy[i] * (cdf + v * pdf));
  }
}

template void gelu_forward<float>(const float*, float*, int64_t);
template void gelu_forward<double>(const double*, double*, int64_t);
template void gelu_backward<float>(const float*, const float*, float*, int64_t);
template void gelu_backward<double>(const double*, const double*, double*, int64_t);

}  // namespace hg::kernels::cpu
