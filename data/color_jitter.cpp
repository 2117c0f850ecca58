// ColorJitter (see color_jitter.h).
#include "data/color_jitter.h"

#include <algorithm>
#include <array>

namespace hg::data {

std::array<double, 4> color_jitter_strengths(const std::vector<double>& timm) {
  if (timm.size() == 1) return {timm[0], timm[0], timm[0], 0};
  HG_CHECK(timm.size() == 3 || timm.size() == 4, "color_jitter: expected one number or a list of ",
           "3 or 4 (brightness, contrast, saturation[, hue]), got ", timm.size(), " values");
  return {timm[0], timm[1], timm[2], timm.size() == 4 ? timm[3] : 0};
}

std::string color_jitter_text(const std::vector<double>& timm) {
  if (timm.size() == 1) return str(timm[0]);
  std::string out = "[";
  for (size_t i = 0; i < timm.size(); ++i) out += str(i ? ", " : "", timm[i]);
  return out + "]";
}

ColorJitter::ColorJitter(double brightness, double contrast, double saturation, double hue)
    : brightness_(brightness), contrast_(contrast), saturation_(saturation), hue_(hue) {
  HG_CHECK(brightness >= 0 && contrast >= 0 && saturation >= 0 && hue >= 0 && hue <= 0.5,
           "ColorJitter: strengths must be >= 0 (hue in [0, 0.5]), got brightness ", brightness,
           ", contrast ", contrast, ", saturation ", saturation, ", hue ", hue);
}

Image ColorJitter::apply(const Image& img, Generator& gen) const {
  // a uniformly random permutation (Fisher-Yates) of the three enhance ops, and of the hue when
  // it is on (torchvision permutes all four; without hue the draws are those of the three alone)
  std::array<int, 4> order{0, 1, 2, 3};
  const size_t n = hue_ > 0 ? 4 : 3;
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[size_t(gen.randint(int64_t(i)))]);
  const std::array<double, 3> strength{brightness_, contrast_, saturation_};
  std::array<double, 3> factor{1, 1, 1};
  for (size_t k = 0; k < 3; ++k)
    if (strength[k] > 0)
      factor[k] = gen.uniform(std::max(0.0, 1.0 - strength[k]), 1.0 + strength[k]);
  const double hue = hue_ > 0 ? gen.uniform(-hue_, hue_) : 0.0;
  Image out = img;
  for (size_t j = 0; j < n; ++j) {
    const int k = order[j];
    if (k == 3) {
      out = adjust_hue(out, hue);
      continue;
    }
    if (strength[size_t(k)] <= 0) continue;
    if (k == 0) out = adjust_brightness(out, factor[0]);
    if (k == 1) out = adjust_contrast(out, factor[1]);
    if (k == 2) out = adjust_color(out, factor[2]);
  }
  return out;
}

}  // namespace hg::data
