// SyntheticDataset: random images made on the fly from a fixed seed, for benchmarks and smoke runs
// that must not depend on files. Each class has its own mean brightness, so a model can learn it.
#pragma once

#include "data/dataset.h"

namespace hg::data {

class SyntheticDataset : public Dataset {
 public:
  /// `size` samples of (height, width, channels); sample i depends only on (seed, i). Throws
  /// hg::Error for non-positive sizes or channels other than 1 or 3.
  SyntheticDataset(int64_t size, int64_t num_classes, int64_t height, int64_t width, int64_t channels,
                   uint64_t seed);

  int64_t size() const override { return size_; }
  int64_t num_classes() const override { return num_classes_; }
  int64_t channels() const override { return channels_; }
  /// Label = hash(seed, i) mod num_classes; pixel = class level (0..127) + uniform noise (0..127).
  Sample get(int64_t index) const override;
  std::string describe() const override;

 private:
  int64_t size_, num_classes_, height_, width_, channels_;
  uint64_t seed_;
};

}  // namespace hg::data
