// CPU reference of kernels/layer_scale.h.
#include "kernels/layer_scale.h"

#include <cstddef>
#include <vector>

namespace hg::kernels::cpu {

template <typename T>
void layer_scale_forward(const T* x, const T* gamma, T* y, int64_t rows, int64_t C) {
#pragma omp parallel for if (rows * C > 65536)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c) y[r * C + c] = x[r * C + c] * gamma[c];
}

template <typename T>
void layer_scale_grad_gamma(const T* x, const T* dy, T* dgamma, int64_t rows, int64_t C) {
  std::vector<double> acc(static_cast<size_t>(C), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c)
      acc[static_cast<size_t>(c)] += static_cast<double>(dy[r * C + c]) * x[r * C + c];
  for (int64_t c = 0; c < C; ++c) dgamma[c] = static_cast<T>(acc[static_cast<size_t>(c)]);
}

template void layer_scale_forward<float>(const float*, const float*, float*, int64_t, int64_t);
template void layer_scale_forward<double>(const double*, const double*, double*, int64_t, int64_t);
template void layer_scale_grad_gamma<float>(const float*, const float*, float*, int64_t, int64_t);
template void layer_scale_grad_gamma<double>(const double*, const double*, double*, int64_t,
                                             int64_t);

}  // namespace hg::kernels::cpu
