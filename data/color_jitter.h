// ColorJitter (torchvision, as timm uses it when no RandAugment is set: config key `color_jitter`,
// one strength s for brightness, contrast and saturation, no hue): each factor is drawn uniformly
// from [max(0, 1 - s), 1 + s], and the three adjustments (data/image_ops.h enhance ops) run in a
// random order. A strength of 0 turns its adjustment off.
#pragma once

#include "core/random.h"
#include "data/image_ops.h"

namespace hg::data {

class ColorJitter {
 public:
  /// Strengths >= 0; throws hg::Error naming the bad one otherwise.
  ColorJitter(double brightness, double contrast, double saturation);
  /// Draws the order, then the factors, from `gen`; returns the adjusted image.
  Image apply(const Image& img, Generator& gen) const;
  bool active() const { return brightness_ > 0 || contrast_ > 0 || saturation_ > 0; }

 private:
  double brightness_, contrast_, saturation_;
};

}  // namespace hg::data
