// CPU global average pooling over H, W of NHWC activations (kernels/pool.h).
#include "kernels/pool.h"

namespace hg::kernels::cpu {

template <typename T>
void global_avg_pool_forward(int64_t N, int64_t HW, int64_t C, const T* x, T* y) {
  const T inv = T(1) / static_cast<T>(HW);
  for (int64_t n = 0; n < N; ++n) {
    T* out = y + n * C;
    for (int64_t c = 0; c < C; ++c) out[c] = T(0);
    for (int64_t p = 0; p < HW; ++p) {  // pixels outer, channels inner: reads x in memory order
      const T* in = x + (n * HW + p) * C;
      for (int64_t c = 0; c < C; ++c) out[c] += in[c];
    }
    for (int64_t c = 0; c < C; ++c) out[c] *= inv;
  }
}

template <typename T>
void global_avg_pool_backward(int64_t N, int64_t HW, int64_t C, const T* gy, T* gx) {
  const T inv = T(1) / static_cast<T>(HW);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < HW; ++p) {
      T* out = gx + (n * HW + p) * C;
      for (int64_t c = 0; c < C; ++c) out[c] = gy[n * C + c] * inv;
    }
}

template void global_avg_pool_forward<float>(int64_t, int64_t, int64_t, const float*, float*);
template void global_avg_pool_forward<double>(int64_t, int64_t, int64_t, const double*, double*);
template void global_avg_pool_backward<float>(int64_t, int64_t, int64_t, const float*, float*);
template void global_avg_pool_backward<double>(int64_t, int64_t, int64_t, const double*, double*);

}  // namespace hg::kernels::cpu
