// Element types and devices. Storage exists for every dtype; arithmetic is done in f32 or f64.
// bf16 is the activation dtype of mixed precision (`precision: bf16`): stored as bf16, computed in
// f32 (CUDA kernels load bf16 and accumulate in f32; the CPU reference widens bf16 tensors to f32,
// computes, and rounds its outputs to bf16 with round-to-nearest-even: core/dispatch.h; the layers'
// side of mixed precision: layers/dispatch.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"

namespace hg {

enum class DType : uint8_t { f32, f64, bf16, f16, i64, i32, u8, boolean };
enum class Device : uint8_t { cpu, cuda };

/// Bytes per element.
inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64: case DType::i64: return 8;
    case DType::f32: case DType::i32: return 4;
    case DType::bf16: case DType::f16: return 2;
    case DType::u8: case DType::boolean: return 1;
  }
  return 0;
}

/// Short names as printed in errors ("f32") and as used by safetensors ("F32").
inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";   case DType::f64: return "f64";
    case DType::bf16: return "bf16"; case DType::f16: return "f16";
    case DType::i64: return "i64";   case DType::i32: return "i32";
    case DType::u8: return "u8";     case DType::boolean: return "bool";
  }
  return "?";
}
inline const char* device_name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

inline bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::bf16 || t == DType::f16;
}

/// One bf16 element as raw bits (same layout as CUDA's __nv_bfloat16); convert with bf16_to_f32 /
/// f32_to_bf16 below. Host code never does arithmetic on it.
struct bf16 {
  uint16_t bits;
};

/// The DType of a C++ element type: dtype_of<float>() == DType::f32.
template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<bf16>() { return DType::bf16; }

// ---- bf16 / f16 <-> f32 (round to nearest even), for storage conversion on the CPU -------------
inline float bf16_to_f32(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

}  // namespace hg

/// Run `body` with `scalar_t` bound to float or double according to `dtype`; throws otherwise.
#define HG_DISPATCH_FLOAT(dtype, opname, ...)                                                  \
  [&] {                                                                                        \
    switch (dtype) {                                                                           \
      case ::hg::DType::f32: { using scalar_t = float; return __VA_ARGS__(); }                 \
      case ::hg::DType::f64: { using scalar_t = double; return __VA_ARGS__(); }                \
      default:                                                                                 \
        throw ::hg::Error(::hg::str(opname, ": dtype ", ::hg::dtype_name(dtype),               \
                                    " not supported (CPU computes in f32 or f64)"));           \
    }                                                                                          \
  }()
