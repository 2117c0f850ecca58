// Dtype dispatch for kernels, in one place (the mixed-precision rules are in layers/dispatch.h).
//
// * CUDA kernels are templates on their storage type: HG_DISPATCH_CUDA binds scalar_t to float or
//   hg::bf16 (math and accumulation are float either way).
// * CPU kernels compute in float or double: HG_DISPATCH_FLOAT (core/dtype.h). A bf16 tensor on
//   the CPU is computed in f32 on a widened copy, and the result rounded to bf16 (round to nearest
//   even): the CPU reference of the GPU's bf16 path. The pattern, at the top of an op's
//   kernel-calling helper:
//       if (cpu_bf16(x)) return round_bf16(helper(cpu_f32(x), cpu_f32(w), ...));
#pragma once

#include "core/tensor.h"

/// Run `body` with `scalar_t` bound to the CUDA storage type of `dtype` (float or hg::bf16).
#define HG_DISPATCH_CUDA(dtype, opname, ...)                                                   \
  [&] {                                                                                        \
    switch (dtype) {                                                                           \
      case ::hg::DType::f32: { using scalar_t = float; return __VA_ARGS__(); }                 \
      case ::hg::DType::bf16: { using scalar_t = ::hg::bf16; return __VA_ARGS__(); }           \
      default:                                                                                 \
        throw ::hg::Error(::hg::str(opname, ": dtype ", ::hg::dtype_name(dtype),               \
                                    " not supported on cuda (f32 or bf16)"));                  \
    }                                                                                          \
  }()

namespace hg {

/// True for a bf16 tensor on the CPU: compute it through cpu_f32 / round_bf16.
inline bool cpu_bf16(const Tensor& t) {
  return t.defined() && t.device() == Device::cpu && t.dtype() == DType::bf16;
}

/// An f32 copy of a bf16 tensor (not recorded); any other (or undefined) tensor as it is.
inline Tensor cpu_f32(const Tensor& t) {
  if (!t.defined() || t.dtype() != DType::bf16) return t;
  Tensor out = Tensor::empty(t.shape(), DType::f32, t.device());
  out.copy_(t);
  return out;
}

/// `t` rounded to bf16 (not recorded); undefined stays undefined.
inline Tensor round_bf16(const Tensor& t) {
  if (!t.defined() || t.dtype() == DType::bf16) return t;
  Tensor out = Tensor::empty(t.shape(), DType::bf16, t.device());
  out.copy_(t);
  return out;
}

}  // namespace hg
