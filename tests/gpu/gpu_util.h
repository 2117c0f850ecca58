// GPU test helpers: skip without a GPU, poisoned outputs, guard bytes after buffers.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "kernels/cuda/context.h"

/// First line of every GPU test: skips (with a message) where no CUDA device is present.
#define HG_REQUIRE_GPU()                                                  \
  do {                                                                    \
    if (!::hg::cuda::available()) GTEST_SKIP() << "no CUDA device: GPU test skipped"; \
  } while (0)

namespace hg::test {

/// A CUDA tensor of any dtype that lives inside a larger byte buffer whose tail (kGuardBytes)
/// holds a known pattern; guard_intact() is false when a kernel wrote past the end. The tensor
/// starts poisoned: every byte 0xFF, which is NaN in f32, f64, bf16 and f16, so a kernel that
/// forgets to write an element is caught by the comparison too (integer outputs read as -1).
class Guarded {
 public:
  static constexpr int64_t kGuardBytes = 256;  // a multiple of every dtype's size
  static constexpr uint8_t kPoison = 0xFF, kPattern = 0xA5;

  explicit Guarded(const Shape& shape, DType dtype = DType::f32) {
    const int64_t n = shape_numel(shape), esize = static_cast<int64_t>(dtype_size(dtype));
    buffer_ = Tensor::empty({n + kGuardBytes / esize}, dtype, Device::cuda);
    tensor_ = buffer_.slice(0, 0, n).reshape(shape);
    bytes_ = static_cast<size_t>(n * esize);
    std::vector<uint8_t> init(bytes_ + kGuardBytes, kPoison);
    std::fill(init.begin() + static_cast<std::ptrdiff_t>(bytes_), init.end(), kPattern);
    HG_CHECK(cudaMemcpy(buffer_.data_ptr(), init.data(), init.size(), cudaMemcpyHostToDevice) ==
                 cudaSuccess,
             "Guarded: cudaMemcpy failed");
  }
  Tensor& tensor() { return tensor_; }
  /// True when every guard byte still holds the pattern.
  bool guard_intact() const {
    std::vector<uint8_t> tail(kGuardBytes);
    HG_CHECK(cudaMemcpy(tail.data(), static_cast<const char*>(buffer_.data_ptr()) + bytes_,
                        tail.size(), cudaMemcpyDeviceToHost) == cudaSuccess,
             "Guarded: cudaMemcpy failed");
    for (uint8_t b : tail)
      if (b != kPattern) return false;
    return true;
  }

 private:
  Tensor buffer_, tensor_;
  size_t bytes_ = 0;
};

}  // namespace hg::test
