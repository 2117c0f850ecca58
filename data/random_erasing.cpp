// Random erasing (see random_erasing.h).
#include "data/random_erasing.h"

#include <cmath>
#include <vector>

#include "core/error.h"

namespace hg::data {

RandomErasing::RandomErasing(RandomErasingOptions opts) : opts_(std::move(opts)) {
  HG_CHECK(opts_.probability >= 0 && opts_.probability <= 1,
           "RandomErasing: probability must be in [0, 1], got ", opts_.probability);
  HG_CHECK(opts_.mode == "pixel" || opts_.mode == "rand" || opts_.mode == "const",
           "RandomErasing: mode must be pixel, rand or const, got '", opts_.mode, "'");
  HG_CHECK(opts_.max_count >= 1, "RandomErasing: max_count must be >= 1, got ", opts_.max_count);
  HG_CHECK(opts_.min_area > 0 && opts_.min_area <= opts_.max_area && opts_.max_area <= 1,
           "RandomErasing: area range must satisfy 0 < min <= max <= 1, got [", opts_.min_area,
           ", ", opts_.max_area, "]");
  HG_CHECK(opts_.min_aspect > 0, "RandomErasing: min_aspect must be > 0, got ", opts_.min_aspect);
}

std::vector<EraseBox> RandomErasing::apply(float* img, int64_t H, int64_t W, int64_t C,
                                           Generator& gen) const {
  std::vector<EraseBox> boxes;
  if (opts_.probability <= 0 || gen.uniform() > opts_.probability) return boxes;
  const double area = static_cast<double>(H * W);
  const double log_lo = std::log(opts_.min_aspect), log_hi = std::log(1.0 / opts_.min_aspect);
  const int64_t count = opts_.max_count == 1 ? 1 : 1 + gen.randint(opts_.max_count);
  for (int64_t k = 0; k < count; ++k) {
    for (int attempt = 0; attempt < 10; ++attempt) {
      const double target =
          gen.uniform(opts_.min_area, opts_.max_area) * area / static_cast<double>(count);
      const double aspect = std::exp(log_lo < log_hi ? gen.uniform(log_lo, log_hi) : log_lo);
      const int64_t h = std::llround(std::sqrt(target * aspect)),
                    w = std::llround(std::sqrt(target / aspect));
      if (!(w < W && h < H)) continue;
      const EraseBox b{gen.randint(H - h + 1), gen.randint(W - w + 1), h, w};
      std::vector<float> colour(static_cast<size_t>(C), 0.0f);
      if (opts_.mode == "rand")
        for (float& v : colour) v = static_cast<float>(gen.normal());
      const bool per_pixel = opts_.mode == "pixel";  // decided once, not per value
      for (int64_t y = b.top; y < b.top + h; ++y) {
        float* row = img + (y * W + b.left) * C;
        if (per_pixel) {
          gen.fill_normal(row, w * C);
        } else {
          for (int64_t x = 0; x < w; ++x)
            for (int64_t c = 0; c < C; ++c) row[x * C + c] = colour[size_t(c)];
        }
      }
      boxes.push_back(b);
      break;
    }
  }
  return boxes;
}

}  // namespace hg::data
