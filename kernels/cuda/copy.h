// CUDA copies that cudaMemcpy cannot do: strided (view) copies and fills. Any dtype of 1, 2, 4 or 8
// bytes (fill: f32, f64, i64, i32, u8, bf16). Both tensors on the GPU, same dtype and shape.
#pragma once

#include "core/tensor.h"

namespace hg::kernels::cuda {
void strided_copy(const Tensor& dst, const Tensor& src);
void fill(const Tensor& dst, double value);
/// dst = src converted between f32 and bf16 (round to nearest even), both dense, same shape.
void convert(const Tensor& dst, const Tensor& src);
/// The same on raw device arrays of n elements.
void convert(const float* src, hg::bf16* dst, int64_t n);
void convert(const hg::bf16* src, float* dst, int64_t n);
}  // namespace hg::kernels::cuda
