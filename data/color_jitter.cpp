// ColorJitter (see color_jitter.h).
#include "data/color_jitter.h"

#include <algorithm>
#include <array>

namespace hg::data {

ColorJitter::ColorJitter(double brightness, double contrast, double saturation)
    : brightness_(brightness), contrast_(contrast), saturation_(saturation) {
  HG_CHECK(brightness >= 0 && contrast >= 0 && saturation >= 0,
           "ColorJitter: strengths must be >= 0, got brightness ", brightness, ", contrast ",
           contrast, ", saturation ", saturation);
}

Image ColorJitter::apply(const Image& img, Generator& gen) const {
  std::array<int, 3> order{0, 1, 2};  // a uniformly random permutation (Fisher-Yates)
  for (size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[size_t(gen.randint(int64_t(i)))]);
  const std::array<double, 3> strength{brightness_, contrast_, saturation_};
  std::array<double, 3> factor{1, 1, 1};
  for (size_t k = 0; k < 3; ++k)
    if (strength[k] > 0)
      factor[k] = gen.uniform(std::max(0.0, 1.0 - strength[k]), 1.0 + strength[k]);
  Image out = img;
  for (const int k : order) {
    if (strength[size_t(k)] <= 0) continue;
    if (k == 0) out = adjust_brightness(out, factor[0]);
    if (k == 1) out = adjust_contrast(out, factor[1]);
    if (k == 2) out = adjust_color(out, factor[2]);
  }
  return out;
}

}  // namespace hg::data
