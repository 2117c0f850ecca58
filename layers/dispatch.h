// Mixed precision in the layers: how a layer runs on bf16 activations.
//
// * Parameters stay f32 (the master weights the optimizer updates). A layer that receives bf16
//   activations uses `compute_copy(param, x)`: a bf16 copy made by the recorded cast (Tensor::to),
//   whose backward widens the gradient to f32 and accumulates it into the f32 parameter's
//   gradient. One cast per parameter per step. (As in PyTorch autocast, the parameter gradient
//   is accumulated in f32 inside the kernel and rounded to bf16 once before it is widened.)
// * On the GPU, kernels take bf16 storage and compute (and accumulate) in f32 (HG_DISPATCH_CUDA).
// * On the CPU (the reference that CI tests), a bf16 op computes in f32 on widened copies of its
//   bf16 inputs and rounds its outputs to bf16 (round to nearest even): core/dispatch.h's
//       if (cpu_bf16(x)) return round_bf16(helper(cpu_f32(x), cpu_f32(w), ...));
//   so the CPU bf16 result is exactly "f32 math, bf16 storage", the same contract as the GPU's.
#pragma once

#include "core/dispatch.h"

namespace hg {

/// The parameter in the activation's dtype: for bf16 activations and an f32 parameter the
/// recorded cast (f32 master -> bf16 compute copy; its gradient flows back into p in f32);
/// otherwise `p` itself, so any other dtype mismatch reaches the op's dtype check.
inline Tensor compute_copy(const Tensor& p, const Tensor& x) {
  if (!p.defined() || p.dtype() == x.dtype()) return p;
  if (x.dtype() == DType::bf16 && p.dtype() == DType::f32) return p.to(DType::bf16);
  return p;
}

}  // namespace hg
