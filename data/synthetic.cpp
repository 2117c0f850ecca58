// SyntheticDataset: deterministic random images (see synthetic.h).
#include "data/synthetic.h"

#include "data/seeds.h"

namespace hg::data {

SyntheticDataset::SyntheticDataset(int64_t size, int64_t num_classes, int64_t height, int64_t width,
                                   int64_t channels, uint64_t seed)
    : size_(size), num_classes_(num_classes), height_(height), width_(width), channels_(channels), seed_(seed) {
  HG_CHECK(size > 0 && num_classes > 0 && height > 0 && width > 0, "SyntheticDataset: sizes must be positive, got ",
           size, " samples, ", num_classes, " classes, ", height, "x", width);
  HG_CHECK(channels == 1 || channels == 3, "SyntheticDataset: channels must be 1 or 3, got ", channels);
}

Sample SyntheticDataset::get(int64_t index) const {
  HG_CHECK(index >= 0 && index < size_, "SyntheticDataset::get: index ", index, " out of range [0, ", size_, ")");
  uint64_t state = mix_seed(seed_, 3, static_cast<uint64_t>(index));
  Sample s;
  s.label = static_cast<int64_t>(state % static_cast<uint64_t>(num_classes_));
  const int level = num_classes_ > 1 ? static_cast<int>(127 * s.label / (num_classes_ - 1)) : 64;
  s.image.height = height_;
  s.image.width = width_;
  s.image.channels = channels_;
  s.image.pixels.resize(static_cast<size_t>(height_ * width_ * channels_));
  for (auto& p : s.image.pixels) {
    state = splitmix64(state);  // a cheap stream: benchmarks must not be bound by this
    p = static_cast<uint8_t>(level + static_cast<int>(state >> 57));  // noise in [0, 127]
  }
  return s;
}

std::string SyntheticDataset::describe() const {
  return str("SyntheticDataset: ", size_, " images ", height_, "x", width_, "x", channels_, ", ", num_classes_,
             " classes, seed ", seed_);
}

}  // namespace hg::data
