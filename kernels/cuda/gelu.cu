// CUDA exact-erf GELU of kernels/gelu.h on float or bf16 storage: 16-byte vector loads and stores
// (bf16.cuh map_elements), float math.
#include "kernels/cuda/bf16.cuh"
#include "kernels/cuda/check.h"
#include "kernels/gelu.h"

namespace hg::kernels::cuda {
namespace {
constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

struct GeluForward {  // y = x Phi(x)
  __device__ void operator()(int64_t, int, const float (&x)[1], float (&y)[1]) const {
    y[0] = 0.5f * x[0] * (1.0f + erff(x[0] * kInvSqrt2));
  }
};

struct GeluBackward {  // dx = dy (Phi(x) + x phi(x)); in = {x, dy}
  __device__ void operator()(int64_t, int, const float (&in)[2], float (&dx)[1]) const {
    const float v = in[0];
    const float cdf = 0.5f * (1.0f + erff(v * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
    dx[0] = in[1] * (cdf + v * pdf);
  }
};

struct GeluForwardBackward {  // in = {x, dy}, out = {y, dx}: one erf and one exp for both
  __device__ void operator()(int64_t, int, const float (&in)[2], float (&out)[2]) const {
    const float v = in[0];
    const float cdf = 0.5f * (1.0f + erff(v * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
    out[0] = v * cdf;
    out[1] = in[1] * (cdf + v * pdf);
  }
};
}  // namespace

template <typename T>
void gelu_forward_backward(const T* x, const T* dy, T* y, T* dx, int64_t n) {
  map_elements(MapArgs<device_t<T>, 2, 2>{{dev(x), dev(dy)}, {dev(y), dev(dx)}}, n,
               GeluForwardBackward{});
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T>
void gelu_forward(const T* x, T* y, int64_t n) {
  map_elements(MapArgs<device_t<T>, 1, 1>{{dev(x)}, {dev(y)}}, n, GeluForward{});
  HG_CUDA_LAUNCH_CHECK();
}

template <typename T>
void gelu_backward(const T* x, const T* dy, T* dx, int64_t n) {
  map_elements(MapArgs<device_t<T>, 2, 1>{{dev(x), dev(dy)}, {dev(dx)}}, n, GeluBackward{});
  HG_CUDA_LAUNCH_CHECK();
}

#define HG_INSTANTIATE(T)                                                              \
  template void gelu_forward<T>(const T*, T*, int64_t);                               \
  template void gelu_backward<T>(const T*, const T*, T*, int64_t);                    \
  template void gelu_forward_backward<T>(const T*, const T*, T*, T*, int64_t);
HG_INSTANTIATE(float)
HG_INSTANTIATE(hg::bf16)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cuda
