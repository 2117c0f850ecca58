// CPU reference of kernels/elementwise.h.
#include "kernels/elementwise.h"

namespace hg::kernels::cpu {

template <typename T> void add(const T* a, const T* b, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
template <typename T> void sub(const T* a, const T* b, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] - b[i];
}
template <typename T> void mul(const T* a, const T* b, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}
template <typename T> void scale(const T* a, T s, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = s * a[i];
}
template <typename T> void axpy(T alpha, const T* x, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

#define HG_INSTANTIATE(T)                                        \
  template void add<T>(const T*, const T*, T*, int64_t);         \
  template void sub<T>(const T*, const T*, T*, int64_t);         \
  template void mul<T>(const T*, const T*, T*, int64_t);         \
  template void scale<T>(const T*, T, T*, int64_t);              \
  template void axpy<T>(T, const T*, T*, int64_t);
HG_INSTANTIATE(float)
HG_INSTANTIATE(double)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cpu
