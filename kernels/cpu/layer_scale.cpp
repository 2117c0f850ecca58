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

template <typename T>
void layer_scale_fold(const T* w, const T* b, const T* gamma, T* wf, T* bf, int64_t out,
                      int64_t in) {
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t i = 0; i < in; ++i) wf[o * in + i] = gamma[o] * w[o * in + i];
    if (b) bf[o] = gamma[o] * b[o];
  }
}

template <typename T>
void layer_scale_unfold(const T* gwf, const T* gbf, const T* w, const T* b, const T* gamma, T* gw,
                        T* gb, T* dgamma, int64_t out, int64_t in) {
  for (int64_t o = 0; o < out; ++o) {
    double acc = 0.0;
    for (int64_t i = 0; i < in; ++i) {
      gw[o * in + i] = gamma[o] * gwf[o * in + i];
      acc += static_cast<double>(gwf[o * in + i]) * w[o * in + i];
    }
    if (b) {
      gb[o] = gamma[o] * gbf[o];
      acc += static_cast<double>(gbf[o]) * b[o];
    }
    dgamma[o] = static_cast<T>(acc);
  }
}

template void layer_scale_forward<float>(const float*, const float*, float*, int64_t, int64_t);
template void layer_scale_forward<double>(const double*, const double*, double*, int64_t, int64_t);
template void layer_scale_grad_gamma<float>(const float*, const float*, float*, int64_t, int64_t);
template void layer_scale_grad_gamma<double>(const double*, const double*, double*, int64_t,
                                             int64_t);
template void layer_scale_fold<float>(const float*, const float*, const float*, float*, float*,
                                      int64_t, int64_t);
template void layer_scale_fold<double>(const double*, const double*, const double*, double*,
                                       double*, int64_t, int64_t);
template void layer_scale_unfold<float>(const float*, const float*, const float*, const float*,
                                        const float*, float*, float*, float*, int64_t, int64_t);
template void layer_scale_unfold<double>(const double*, const double*, const double*, const double*,
                                         const double*, double*, double*, double*, int64_t,
                                         int64_t);

}  // namespace hg::kernels::cpu
