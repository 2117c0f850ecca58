// Tensor-level ops with autograd: each checks its inputs (throwing hg::Error that names the op and
// the shapes), runs the CPU or CUDA kernel, and records its backward on the tape.
// Inputs may be any layout (they are made contiguous); outputs are new contiguous tensors.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace hg::ops {

Tensor add(const Tensor& a, const Tensor& b);  ///< same shape, dtype, device
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor scale(const Tensor& a, double s);  ///< s * a

/// dst += src in place (same shape); not recorded: for gradients and optimizer state.
void add_(Tensor& dst, const Tensor& src);

/// (M, K) @ (K, N) -> (M, N); trans_a / trans_b use A^T / B^T as stored, like BLAS.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

/// Sum (or mean) over `axes` (negative allowed, no repeats); keepdim keeps them as size 1. CPU
/// only; f32 / f64, or bf16 (summed in f32, rounded once).
Tensor sum(const Tensor& x, const std::vector<int>& axes, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int>& axes, bool keepdim = false);
/// Sum of all elements -> shape [] (a scalar).
Tensor sum_all(const Tensor& x);

/// Repeats x along its size-1 dims to `shape` (same rank). Used by reduction backward.
Tensor broadcast_to(const Tensor& x, const Shape& shape);

}  // namespace hg::ops
