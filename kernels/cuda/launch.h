// Launch sizes and device scratch memory, shared by the CUDA kernel files.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "core/memory.h"
#include "core/tensor.h"

namespace hg::kernels::cuda {

/// Blocks of `threads` for one thread per element of n (the kernel checks its index against n).
inline unsigned blocks_for(int64_t n, int threads = 256) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

/// Blocks of 256 threads for a grid-stride loop over n elements: at most 65535, the kernel loops
/// over the rest.
inline int grid_stride_blocks(int64_t n) {
  return static_cast<int>(std::min<int64_t>((n + 255) / 256, 65535));
}

/// `bytes` of device memory from the caching allocator, counted as Category::workspace (nullptr
/// for 0). Freed back to the cache when the last pointer goes; use is ordered on the default stream.
inline std::shared_ptr<void> scratch(size_t bytes) {
  if (bytes == 0) return nullptr;
  memory::CategoryScope scope(Category::workspace);
  return memory::allocate(bytes, Device::cuda);
}

/// A device tensor from the caching allocator, counted as Category::workspace.
inline Tensor scratch_tensor(const Shape& shape, DType dtype = DType::f32) {
  memory::CategoryScope scope(Category::workspace);
  return Tensor::empty(shape, dtype, Device::cuda);
}

}  // namespace hg::kernels::cuda
