// Device-side helpers for kernels templated on their storage type T (float or __nv_bfloat16):
// loads widen to float, stores round to T (round to nearest even, as the CPU's f32_to_bf16), all
// arithmetic in float. Host entry points take hg::bf16* (core/dtype.h, same bits) and pass
// dev(p) to kernels.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "core/cuda_stream.h"
#include "core/dtype.h"

namespace hg::kernels::cuda {

/// The device element type of a host element type: hg::bf16 -> __nv_bfloat16, else itself.
template <typename T> struct device_type { using type = T; };
template <> struct device_type<hg::bf16> { using type = __nv_bfloat16; };
template <typename T> using device_t = typename device_type<T>::type;

/// Host pointer type -> device element pointer (a reinterpretation, the bits are the same).
template <typename T> inline device_t<T>* dev(T* p) { return reinterpret_cast<device_t<T>*>(p); }
template <typename T> inline const device_t<T>* dev(const T* p) {
  return reinterpret_cast<const device_t<T>*>(p);
}

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

/// 16 bytes of T: 4 floats or 8 bf16. Loads and stores of one Vec16 are single 128-bit accesses
/// when the address is 16-byte aligned (the caller checks with aligned16()).
template <typename T> struct alignas(16) Vec16 {
  static constexpr int n = 16 / sizeof(T);
  T v[n];
};
inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

/// 4 consecutive elements as floats, through the read-only cache: one 16-byte (float) or 8-byte
/// (bf16) access, so p must be aligned to 4 elements. For data the kernel does not write.
__device__ __forceinline__ void load4(const float* p, float (&v)[4]) {
  const float4 t = __ldg(reinterpret_cast<const float4*>(p));
  v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
}
__device__ __forceinline__ void load4(const __nv_bfloat16* p, float (&v)[4]) {
  const uint2 t = __ldg(reinterpret_cast<const uint2*>(p));
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&t.x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&t.y));
  v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
}
/// 4 floats stored as 4 consecutive T (rounded to nearest even for bf16), one aligned access.
__device__ __forceinline__ void store4(float* p, const float (&v)[4]) {
  *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ __forceinline__ void store4(__nv_bfloat16* p, const float (&v)[4]) {
  const __nv_bfloat162 a = __floats2bfloat162_rn(v[0], v[1]), b = __floats2bfloat162_rn(v[2], v[3]);
  uint2 t;
  t.x = *reinterpret_cast<const uint32_t*>(&a);
  t.y = *reinterpret_cast<const uint32_t*>(&b);
  *reinterpret_cast<uint2*>(p) = t;
}

}  // namespace hg::kernels::cuda

namespace hg::kernels::cuda {

/// NI input and NO output arrays of n elements of type T (device pointers).
template <typename T, int NI, int NO> struct MapArgs {
  const T* in[NI];
  T* out[NO];
};

/// out_k[i] = f(in_0[i], ..) for i < n, elementwise: f(int64_t base, int e, const float (&x)[NI],
/// float (&y)[NO]) with i = base + e (base is the same for the elements of one vector, so a
/// functor can compute base % C once). Each thread takes one 16-byte vector of every array (8 bf16 or 4 float: single
/// 128-bit loads and stores) in a grid-stride loop; `vec` false (unaligned arrays) takes the
/// scalar loop for all elements. Math in float, one rounding per output.
template <typename T, int NI, int NO, typename F>
__global__ void map_elements_kernel(MapArgs<T, NI, NO> a, int64_t n, bool vec, F f) {
  constexpr int V = Vec16<T>::n;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t tid = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t nvec = vec ? n / V : 0;
  for (int64_t k = tid; k < nvec; k += stride) {
    Vec16<T> xv[NI], yv[NO];
#pragma unroll
    for (int j = 0; j < NI; ++j) xv[j] = reinterpret_cast<const Vec16<T>*>(a.in[j])[k];
#pragma unroll
    for (int e = 0; e < V; ++e) {
      float x[NI], y[NO];
#pragma unroll
      for (int j = 0; j < NI; ++j) x[j] = to_f32(xv[j].v[e]);
      f(k * V, e, x, y);
#pragma unroll
      for (int j = 0; j < NO; ++j) yv[j].v[e] = from_f32<T>(y[j]);
    }
#pragma unroll
    for (int j = 0; j < NO; ++j) reinterpret_cast<Vec16<T>*>(a.out[j])[k] = yv[j];
  }
  for (int64_t i = nvec * V + tid; i < n; i += stride) {  // the tail (or everything, unaligned)
    float x[NI], y[NO];
#pragma unroll
    for (int j = 0; j < NI; ++j) x[j] = to_f32(a.in[j][i]);
    f(i, 0, x, y);
#pragma unroll
    for (int j = 0; j < NO; ++j) a.out[j][i] = from_f32<T>(y[j]);
  }
}

/// Launches map_elements_kernel on the default stream (T: the device element type).
template <typename T, int NI, int NO, typename F>
void map_elements(const MapArgs<T, NI, NO>& a, int64_t n, F f) {
  if (n == 0) return;
  bool vec = true;
  for (int j = 0; j < NI; ++j) vec = vec && aligned16(a.in[j]);
  for (int j = 0; j < NO; ++j) vec = vec && aligned16(a.out[j]);
  constexpr int V = Vec16<T>::n;
  const int64_t work = vec ? (n + V - 1) / V : n;
  const int blocks = static_cast<int>(work < 256 ? 1 : (work + 255) / 256 > 65535 * 4 ? 65535 * 4 : (work + 255) / 256);
  map_elements_kernel<<<blocks, 256, 0, hg::cuda::stream()>>>(a, n, vec, f);
}

}  // namespace hg::kernels::cuda
