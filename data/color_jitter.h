// ColorJitter (torchvision, as timm uses it when no RandAugment is set: config key `color_jitter`,
// timm's one strength s for brightness, contrast and saturation, or its 3 or 4 values: brightness,
// contrast, saturation[, hue]): each enhance factor is drawn uniformly from [max(0, 1 - s), 1 + s],
// the hue shift from [-hue, hue], and the adjustments (data/image_ops.h enhance ops, adjust_hue)
// run in a random order. A strength of 0 turns its adjustment off.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/random.h"
#include "data/image_ops.h"

namespace hg::data {

/// timm's color_jitter value as (brightness, contrast, saturation, hue): one number is the first
/// three (hue 0), a list of 3 or 4 is those values. Throws hg::Error for another count.
std::array<double, 4> color_jitter_strengths(const std::vector<double>& timm);

/// "0.4" or "[0.4, 0.4, 0.4, 0.1]": timm's value as a config writes it, for messages.
std::string color_jitter_text(const std::vector<double>& timm);

class ColorJitter {
 public:
  /// Strengths >= 0, hue <= 0.5 (torchvision's bound); throws hg::Error naming the bad one
  /// otherwise.
  ColorJitter(double brightness, double contrast, double saturation, double hue = 0);
  /// Draws the order, then the factors, from `gen`; returns the adjusted image.
  Image apply(const Image& img, Generator& gen) const;
  bool active() const { return brightness_ > 0 || contrast_ > 0 || saturation_ > 0 || hue_ > 0; }

 private:
  double brightness_, contrast_, saturation_, hue_;
};

}  // namespace hg::data
