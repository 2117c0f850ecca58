// GPU test helpers: skip without a GPU, poisoned outputs, guard bytes after buffers.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/tensor.h"
#include "kernels/cuda/context.h"

/// First line of every GPU test: skips (with a message) where no CUDA device is present.
#define HG_REQUIRE_GPU()                                                  \
  do {                                                                    \
    if (!::hg::cuda::available()) GTEST_SKIP() << "no CUDA device: GPU test skipped"; \
  } while (0)

namespace hg::test {

/// A CUDA tensor that lives inside a larger buffer whose tail (kGuard floats) holds a known
/// pattern; check() fails the test when a kernel wrote past the end. The tensor is poisoned (NaN)
/// so a kernel that forgets to write an element is caught too.
class Guarded {
 public:
  static constexpr int64_t kGuard = 64;
  explicit Guarded(const Shape& shape) {
    int64_t n = shape_numel(shape);
    buffer_ = Tensor::full({n + kGuard}, 12345.0, DType::f32, Device::cuda);
    tensor_ = buffer_.slice(0, 0, n).reshape(shape);
    tensor_.fill_(std::nan(""));
  }
  Tensor& tensor() { return tensor_; }
  /// True when every guard float still holds the pattern.
  bool guard_intact() const {
    std::vector<float> all = buffer_.to_vector<float>();
    for (size_t i = all.size() - kGuard; i < all.size(); ++i)
      if (all[i] != 12345.0f) return false;
    return true;
  }

 private:
  Tensor buffer_, tensor_;
};

}  // namespace hg::test
