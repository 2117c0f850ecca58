// Random erasing (Zhong et al. 2017) as timm's RandomErasing applies it to a normalised image
// (config keys `reprob`, `remode`, `recount`): with probability `probability` the image gets
// `count` boxes, count uniform in [1, max_count]; each box tries up to 10 times an area of
// U(min_area, max_area) * H * W / count and a log-uniform aspect in [min_aspect, 1 / min_aspect],
// h = round(sqrt(area * aspect)), w = round(sqrt(area / aspect)), and is placed (top-left uniform)
// when h < H and w < W. Fill: "pixel" a standard normal value per pixel and channel, "rand" one
// normal value per channel for the box, "const" zeros (the dataset mean after normalisation).
#pragma once

#include <cstdint>
#include <string>

#include "core/random.h"

namespace hg::data {

struct RandomErasingOptions {
  double probability = 0.0;    ///< reprob: chance that an image is erased at all
  std::string mode = "pixel";  ///< remode: "pixel" | "rand" | "const"
  int64_t max_count = 1;       ///< recount: boxes per erased image, uniform in [1, max_count]
  double min_area = 0.02;      ///< box area fraction range (of the image, split over the boxes)
  double max_area = 1.0 / 3.0;
  double min_aspect = 0.3;  ///< aspect h / w in [min_aspect, 1 / min_aspect], log-uniform
};

/// One erased box, for tests: rows [top, top + h), columns [left, left + w).
struct EraseBox {
  int64_t top = 0, left = 0, h = 0, w = 0;
};

class RandomErasing {
 public:
  /// Throws hg::Error for a probability outside [0, 1], an unknown mode, max_count < 1 or a bad
  /// range.
  explicit RandomErasing(RandomErasingOptions opts);
  /// Erases boxes of `img` (H, W, C) floats in place, drawing from `gen`; returns the boxes erased.
  std::vector<EraseBox> apply(float* img, int64_t H, int64_t W, int64_t C, Generator& gen) const;
  bool active() const { return opts_.probability > 0; }
  const RandomErasingOptions& options() const { return opts_; }

 private:
  RandomErasingOptions opts_;
};

}  // namespace hg::data
