// CPU reference of kernels/optimizer.h (math in T, the order of PyTorch's single-tensor path).
#include "kernels/optimizer.h"

#include <algorithm>
#include <cmath>

namespace hg::kernels::cpu {

template <typename T>
void adamw_update(T* p, const T* g, T* m, T* v, int64_t n, const AdamWHyper& h) {
  const T decay = static_cast<T>(1.0 - h.lr * h.weight_decay);
  const T b1 = static_cast<T>(h.beta1), b2 = static_cast<T>(h.beta2);
  const T step_size = static_cast<T>(h.lr / h.bias_correction1);
  const T bc2_sqrt = static_cast<T>(std::sqrt(h.bias_correction2));
  const T eps = static_cast<T>(h.eps);
  for (int64_t i = 0; i < n; ++i) {
    p[i] *= decay;
    m[i] = b1 * m[i] + (T(1) - b1) * g[i];
    v[i] = b2 * v[i] + (T(1) - b2) * g[i] * g[i];
    p[i] -= step_size * m[i] / (std::sqrt(v[i]) / bc2_sqrt + eps);
  }
}

template <typename T>
void sgd_update(T* p, const T* g, T* buf, int64_t n, const SGDHyper& h) {
  const T lr = static_cast<T>(h.lr), mom = static_cast<T>(h.momentum),
          wd = static_cast<T>(h.weight_decay);
  for (int64_t i = 0; i < n; ++i) {
    T d = g[i] + wd * p[i];
    if (h.momentum != 0) {
      buf[i] = h.first_step ? d : mom * buf[i] + d;
      d = h.nesterov ? d + mom * buf[i] : buf[i];
    }
    p[i] -= lr * d;
  }
}

template <typename T>
void clip_scale(T* g, int64_t n, const T* total_norm, double max_norm) {
  const T coef =
      static_cast<T>(std::min(max_norm / (static_cast<double>(total_norm[0]) + 1e-6), 1.0));
  for (int64_t i = 0; i < n; ++i) g[i] *= coef;
}

#define HG_INSTANTIATE(T)                                                          \
  template void adamw_update<T>(T*, const T*, T*, T*, int64_t, const AdamWHyper&); \
  template void sgd_update<T>(T*, const T*, T*, int64_t, const SGDHyper&);         \
  template void clip_scale<T>(T*, int64_t, const T*, double);
HG_INSTANTIATE(float)
HG_INSTANTIATE(double)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cpu

namespace hg::kernels {

std::vector<float> adamw_multi_hyper(const std::vector<AdamWTensor>& tensors) {
  std::vector<float> table;
  table.reserve(tensors.size() * kAdamWHyperFloats);
  for (const AdamWTensor& t : tensors) {
    table.push_back(static_cast<float>(1.0 - t.h.lr * t.h.weight_decay));
    table.push_back(static_cast<float>(t.h.lr / t.h.bias_correction1));
    table.push_back(static_cast<float>(std::sqrt(t.h.bias_correction2)));
  }
  return table;
}

}  // namespace hg::kernels
