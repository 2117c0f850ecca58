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

/// A CUDA tensor that lives inside a larger buffer whose tail (kGuard elements) holds a known
/// pattern; check() fails the test when a kernel wrote past the end. The tensor is poisoned (NaN)
/// so a kernel that forgets to write an element is caught too. Any floating dtype (f32, bf16, ...):
/// the pattern is compared as the dtype stores it.
class Guarded {
 public:
  static constexpr int64_t kGuard = 64;
  explicit Guarded(const Shape& shape, DType dtype = DType::f32) {
    int64_t n = shape_numel(shape);
    buffer_ = Tensor::full({n + kGuard}, kPattern, dtype, Device::cuda);
    tensor_ = buffer_.slice(0, 0, n).reshape(shape);
    tensor_.fill_(std::nan(""));
    // the pattern as stored (12345 is not a bf16 value: it reads back rounded)
    pattern_ = Tensor::full({1}, kPattern, dtype, Device::cpu).to_vector<double>()[0];
  }
  Tensor& tensor() { return tensor_; }
  /// True when every guard element still holds the pattern.
  bool guard_intact() const {
    std::vector<double> all = buffer_.to_vector<double>();
    for (size_t i = all.size() - kGuard; i < all.size(); ++i)
      if (all[i] != pattern_) return false;
    return true;
  }

 private:
  static constexpr double kPattern = 12345.0;
  Tensor buffer_, tensor_;
  double pattern_ = 0;
};

}  // namespace hg::test
