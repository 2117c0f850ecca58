// CPU reference of kernels/layernorm.h: plain loops, row statistics in double. Rows run in parallel
// (OpenMP) only for large inputs: thread start-up dominates small ones (tests, gradchecks).
#include "kernels/layernorm.h"

#include <cmath>
#include <cstddef>
#include <vector>

namespace hg::kernels::cpu {

template <typename T>
void layernorm_forward(const T* x, const T* weight, const T* bias, T* y, T* mean, T* rstd,
                       int64_t rows, int64_t C, double eps) {
#pragma omp parallel for if (rows * C > 65536)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += xr[c];
    const double mu = s / static_cast<double>(C);
    double ss = 0;  // two-pass variance: no cancellation
    for (int64_t c = 0; c < C; ++c) ss += (xr[c] - mu) * (xr[c] - mu);
    const double rs = 1.0 / std::sqrt(ss / static_cast<double>(C) + eps);
    for (int64_t c = 0; c < C; ++c)
      y[r * C + c] = static_cast<T>((xr[c] - mu) * rs * weight[c] + bias[c]);
    mean[r] = static_cast<T>(mu);
    rstd[r] = static_cast<T>(rs);
  }
}

template <typename T>
void layernorm_backward(const T* x, const T* weight, const T* mean, const T* rstd, const T* dy,
                        T* dx, T* dweight, T* dbias, int64_t rows, int64_t C) {
  if (dx) {
#pragma omp parallel for if (rows * C > 65536)
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = x + r * C;
      const T* gr = dy + r * C;
      const double mu = mean[r], rs = rstd[r];
      double sum_g = 0, sum_gx = 0;  // sums of g = dy*w and g*xhat over the row
      for (int64_t c = 0; c < C; ++c) {
        const double g = static_cast<double>(gr[c]) * weight[c];
        sum_g += g;
        sum_gx += g * (xr[c] - mu) * rs;
      }
      const double mg = sum_g / static_cast<double>(C), mgx = sum_gx / static_cast<double>(C);
      for (int64_t c = 0; c < C; ++c) {
        const double g = static_cast<double>(gr[c]) * weight[c];
        const double xhat = (xr[c] - mu) * rs;
        dx[r * C + c] = static_cast<T>(rs * (g - mg - xhat * mgx));
      }
    }
  }
  if (dweight || dbias) {
    std::vector<double> dw(static_cast<size_t>(C), 0.0), db(static_cast<size_t>(C), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      const double mu = mean[r], rs = rstd[r];
      for (int64_t c = 0; c < C; ++c) {
        const double g = dy[r * C + c];
        dw[static_cast<size_t>(c)] += g * (x[r * C + c] - mu) * rs;
        db[static_cast<size_t>(c)] += g;
      }
    }
    for (int64_t c = 0; c < C; ++c) {
      if (dweight) dweight[c] = static_cast<T>(dw[static_cast<size_t>(c)]);
      if (dbias) dbias[c] = static_cast<T>(db[static_cast<size_t>(c)]);
    }
  }
}

#define HG_INSTANTIATE(T)                                                                        \
  template void layernorm_forward<T>(const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t, \
                                     double);                                                    \
  template void layernorm_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*,  \
                                      T*, int64_t, int64_t);
HG_INSTANTIATE(float)
HG_INSTANTIATE(double)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cpu
