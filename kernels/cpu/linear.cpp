// CPU fully connected layer (kernels/linear.h): GEMM fast path, plain-loop oracle, bias helpers.
#include "kernels/linear.h"

#include <cstring>

#include "kernels/matmul.h"

namespace hg::kernels::cpu {

template <typename T>
void add_bias_rows(int64_t rows, int64_t cols, const T* bias, T* y) {
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t c = 0; c < cols; ++c) y[m * cols + c] += bias[c];
}

template <typename T>
void bias_grad_rows(int64_t rows, int64_t cols, const T* gy, T* gb) {
  for (int64_t c = 0; c < cols; ++c) gb[c] = T(0);
  for (int64_t m = 0; m < rows; ++m)  // row order: streams gy once, fixed summation order
    for (int64_t c = 0; c < cols; ++c) gb[c] += gy[m * cols + c];
}

template <typename T>
void linear_forward(int64_t M, int64_t in, int64_t out, const T* x, const T* w, const T* bias,
                    T* y) {
  if (bias) {
    for (int64_t m = 0; m < M; ++m) std::memcpy(y + m * out, bias, sizeof(T) * out);
  }
  gemm<T>(false, true, M, out, in, T(1), x, w, bias ? T(1) : T(0), y);  // y (+)= x w^T
}

template <typename T>
void linear_backward_input(int64_t M, int64_t in, int64_t out, const T* gy, const T* w, T* gx) {
  gemm<T>(false, false, M, in, out, T(1), gy, w, T(0), gx);  // gx = gy w
}

template <typename T>
void linear_backward_weight(int64_t M, int64_t in, int64_t out, const T* x, const T* gy, T* gw) {
  gemm<T>(true, false, out, in, M, T(1), gy, x, T(0), gw);  // gw = gy^T x
}

template <typename T>
void linear_forward_reference(int64_t M, int64_t in, int64_t out, const T* x, const T* w,
                              const T* bias, T* y) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t o = 0; o < out; ++o) {
      T acc = bias ? bias[o] : T(0);
      for (int64_t i = 0; i < in; ++i) acc += x[m * in + i] * w[o * in + i];
      y[m * out + o] = acc;
    }
}

#define HG_INSTANTIATE_LINEAR(T)                                                                \
  template void add_bias_rows<T>(int64_t, int64_t, const T*, T*);                               \
  template void bias_grad_rows<T>(int64_t, int64_t, const T*, T*);                              \
  template void linear_forward<T>(int64_t, int64_t, int64_t, const T*, const T*, const T*, T*); \
  template void linear_backward_input<T>(int64_t, int64_t, int64_t, const T*, const T*, T*);    \
  template void linear_backward_weight<T>(int64_t, int64_t, int64_t, const T*, const T*, T*);   \
  template void linear_forward_reference<T>(int64_t, int64_t, int64_t, const T*, const T*,      \
                                            const T*, T*);
HG_INSTANTIATE_LINEAR(float)
HG_INSTANTIATE_LINEAR(double)
#undef HG_INSTANTIATE_LINEAR

}  // namespace hg::kernels::cpu
