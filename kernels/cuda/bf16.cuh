// Device-side helpers for kernels templated on their storage type T (float or __nv_bfloat16):
// loads widen to float, stores round to T (round to nearest even, as the CPU's f32_to_bf16), all
// arithmetic in float. Host entry points take hg::bf16* (core/dtype.h, same bits) and pass
// dev(p) to kernels.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

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

}  // namespace hg::kernels::cuda
