// CUDA copies that cudaMemcpy cannot do: strided (view) copies and fills. Any dtype of 1, 2, 4 or 8
// bytes (fill: f32, f64, i64, i32, u8, bf16). Both tensors on the GPU, same dtype and shape.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace hg::kernels::cuda {
void strided_copy(const Tensor& dst, const Tensor& src);
/// One device-to-device copy of copy_many: `bytes` bytes from src to dst (not overlapping).
struct CopyItem {
  void* dst;
  const void* src;
  int64_t bytes;
};
/// Every item's copy, in one kernel launch per up to 128 items (the table travels as the kernel's
/// parameter, each block copies a 64 KiB chunk of one item; 16-byte accesses where both pointers
/// are 16-byte aligned), on the thread's stream. What one cudaMemcpyAsync per item would do,
/// without a launch or a graph node per item: the backward's per-parameter gradient copies (~180 a
/// ConvNeXt-T step, ~320 a WTConvNeXt-T step, ~1.2 us each plus the gaps between graph nodes).
void copy_many(const std::vector<CopyItem>& items);
void fill(const Tensor& dst, double value);
/// dst = src converted between f32 and bf16 (round to nearest even), both dense, same shape.
void convert(const Tensor& dst, const Tensor& src);
/// The same on raw device arrays of n elements.
void convert(const float* src, hg::bf16* dst, int64_t n);
void convert(const hg::bf16* src, float* dst, int64_t n);
}  // namespace hg::kernels::cuda
