// CPU reference of kernels/drop_path.h (per-sample scaling, and the residual add of a scaled
// branch).
#include "kernels/drop_path.h"

namespace hg::kernels::cpu {

template <typename T>
void scale_rows(const T* x, const T* scale, T* y, int64_t N, int64_t inner) {
#pragma omp parallel for if (N * inner > 65536)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < inner; ++i) y[n * inner + i] = x[n * inner + i] * scale[n];
}

template <typename T>
void add_scaled_rows(const T* x, const T* z, const T* scale, T* y, int64_t N, int64_t inner) {
#pragma omp parallel for if (N * inner > 65536)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < inner; ++i)
      y[n * inner + i] = x[n * inner + i] + z[n * inner + i] * scale[n];
}

template void scale_rows<float>(const float*, const float*, float*, int64_t, int64_t);
template void scale_rows<double>(const double*, const double*, double*, int64_t, int64_t);
template void add_scaled_rows<float>(const float*, const float*, const float*, float*, int64_t,
                                     int64_t);
template void add_scaled_rows<double>(const double*, const double*, const double*, double*, int64_t,
                                      int64_t);

}  // namespace hg::kernels::cpu
