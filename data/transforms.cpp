// Random resized crop, center crop, resampling, the 8-bit augmentations and normalisation, random
// erasing (see transforms.h).
#include "data/transforms.h"

#include <algorithm>
#include <cmath>

namespace hg::data {

namespace {

// Filter taps of one output axis: output i reads input pixels first[i] .. first[i] + count[i] - 1
// with weights w[offset[i] ..]. Flat arrays: no allocation per output pixel.
struct Taps {
  std::vector<int64_t> first, count, offset;
  std::vector<float> w;
};

// PIL's resampling filters of a distance t in input pixels (before widening): support 1 and 2.
double triangle(double t) { return std::max(0.0, 1.0 - std::fabs(t)); }
double cubic_half(double t) {  // Keys' cubic with a = -0.5 (PIL's BICUBIC resize)
  constexpr double a = -0.5;
  t = std::fabs(t);
  if (t < 1.0) return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
  if (t < 2.0) return (((t - 5.0) * t + 8.0) * t - 4.0) * a;
  return 0.0;
}
double support_of(Interp interp) { return interp == Interp::bicubic ? 2.0 : 1.0; }

Taps axis_taps(double start, double len, int64_t in_len, int64_t out_len, Interp interp) {
  const double scale = len / static_cast<double>(out_len);  // input pixels per output pixel
  const double stretch = std::max(scale, 1.0);  // shrinking widens the filter: every input counts
  const double support = support_of(interp) * stretch;
  Taps t;
  t.first.resize(static_cast<size_t>(out_len));
  t.count.resize(static_cast<size_t>(out_len));
  t.offset.resize(static_cast<size_t>(out_len));
  std::vector<double> v;
  for (int64_t i = 0; i < out_len; ++i) {
    const double center = start + (static_cast<double>(i) + 0.5) * scale;  // pixel j has center j + 0.5
    int64_t lo = std::max<int64_t>(0, static_cast<int64_t>(std::floor(center - support)));
    const int64_t hi = interp == Interp::nearest  // nearest: no taps, the one pixel is chosen below
                           ? lo
                           : std::min<int64_t>(in_len, static_cast<int64_t>(std::ceil(center + support)));
    v.clear();
    double sum = 0;
    for (int64_t j = lo; j < hi; ++j) {
      const double d = (static_cast<double>(j) + 0.5 - center) / stretch;
      v.push_back(interp == Interp::bicubic ? cubic_half(d) : triangle(d));
      sum += v.back();
    }
    if (sum == 0) {  // nearest, or a center outside the image (not for boxes inside it)
      lo = std::clamp<int64_t>(static_cast<int64_t>(std::floor(center)), 0, in_len - 1);
      v.assign(1, 1.0);
      sum = 1;
    }
    t.first[size_t(i)] = lo;
    t.count[size_t(i)] = static_cast<int64_t>(v.size());
    t.offset[size_t(i)] = static_cast<int64_t>(t.w.size());
    for (double x : v) t.w.push_back(static_cast<float>(x / sum));  // edges renormalise instead of reading outside
  }
  return t;
}

}  // namespace

int64_t resample_reach(double box_len, int64_t out_len) {
  // axis_taps reads [floor(center - support), ceil(center + support)) with centers inside the box.
  const double stretch = std::max(box_len / static_cast<double>(out_len), 1.0);
  return static_cast<int64_t>(std::ceil(support_of(Interp::bicubic) * stretch)) + 1;
}

void resample_bilinear(const Image& src, const CropBox& box, int64_t out_h, int64_t out_w, bool flip,
                       float* out) {
  resample(src, box, out_h, out_w, flip, Interp::bilinear, out);
}

void resample(const Image& src, const CropBox& box, int64_t out_h, int64_t out_w, bool flip,
              Interp interp, float* out) {
  HG_CHECK(src.height > 0 && src.width > 0 && src.channels > 0, "resample: empty image ", src.height,
           "x", src.width, "x", src.channels);
  HG_CHECK(out_h > 0 && out_w > 0 && box.w > 0 && box.h > 0, "resample: bad box ", box.w, "x", box.h,
           " or output ", out_h, "x", out_w);
  const int64_t C = src.channels;
  const Taps tx = axis_taps(box.x, box.w, src.width, out_w, interp),
             ty = axis_taps(box.y, box.h, src.height, out_h, interp);
  // Columns the horizontal pass reads.
  int64_t x0 = src.width, x1 = 0;
  for (int64_t i = 0; i < out_w; ++i) {
    x0 = std::min(x0, tx.first[size_t(i)]);
    x1 = std::max(x1, tx.first[size_t(i)] + tx.count[size_t(i)]);
  }
  const int64_t span = (x1 - x0) * C;
  // Vertical pass first, one output row at a time: a weighted sum of whole input rows over the
  // columns in use (contiguous, so the compiler vectorises it); then the horizontal pass on that row.
  std::vector<float> row(static_cast<size_t>(span));
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const float* wy = ty.w.data() + ty.offset[size_t(oy)];
    const int64_t fy = ty.first[size_t(oy)], ny = ty.count[size_t(oy)];
    std::fill(row.begin(), row.end(), 0.0f);
    float* r = row.data();
    for (int64_t k = 0; k < ny; ++k) {
      const uint8_t* in = src.pixels.data() + ((fy + k) * src.width + x0) * C;
      const float w = wy[k];
      for (int64_t j = 0; j < span; ++j) r[j] += w * static_cast<float>(in[j]);
    }
    float* orow = out + oy * out_w * C;
    for (int64_t ox = 0; ox < out_w; ++ox) {
      const float* wx = tx.w.data() + tx.offset[size_t(ox)];
      const int64_t nx = tx.count[size_t(ox)];
      const float* p = r + (tx.first[size_t(ox)] - x0) * C;
      float* o = orow + (flip ? out_w - 1 - ox : ox) * C;
      if (C == 3) {  // the common case, unrolled over channels
        float a0 = 0, a1 = 0, a2 = 0;
        for (int64_t k = 0; k < nx; ++k, p += 3) {
          a0 += wx[k] * p[0];
          a1 += wx[k] * p[1];
          a2 += wx[k] * p[2];
        }
        o[0] = a0;
        o[1] = a1;
        o[2] = a2;
      } else {
        for (int64_t c = 0; c < C; ++c) {
          float acc = 0;
          for (int64_t k = 0; k < nx; ++k) acc += wx[k] * p[k * C + c];
          o[c] = acc;
        }
      }
    }
  }
}

void round_to_u8(const float* in, int64_t n, uint8_t* out) {
  // Clamp, truncate, then round up when the dropped fraction is >= 0.5: lround without the libm
  // call, so the loop vectorises. v - t is exact (t = trunc(v) in [v / 2, v] for v >= 1, 0 below).
  for (int64_t i = 0; i < n; ++i) {
    float v = in[i] > 0.0f ? in[i] : 0.0f;  // NaN -> 0 as well
    v = v < 255.0f ? v : 255.0f;
    const auto t = static_cast<int32_t>(v);
    out[i] = static_cast<uint8_t>(t + (v - static_cast<float>(t) >= 0.5f ? 1 : 0));
  }
}

CropBox random_resized_crop_box(int64_t height, int64_t width, const std::array<double, 2>& scale,
                                const std::array<double, 2>& ratio, Generator& rng) {
  const double area = static_cast<double>(height * width);
  const double log_lo = std::log(ratio[0]), log_hi = std::log(ratio[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.uniform(scale[0], scale[1]);
    const double aspect = std::exp(log_lo < log_hi ? rng.uniform(log_lo, log_hi) : log_lo);
    const int64_t w = std::llround(std::sqrt(target * aspect));
    const int64_t h = std::llround(std::sqrt(target / aspect));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      const int64_t y = rng.randint(height - h + 1), x = rng.randint(width - w + 1);
      return CropBox{double(x), double(y), double(w), double(h)};
    }
  }
  // Fallback: the whole image, cut to the nearest allowed aspect.
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  int64_t w = width, h = height;
  if (in_ratio < ratio[0]) h = std::llround(static_cast<double>(w) / ratio[0]);
  else if (in_ratio > ratio[1]) w = std::llround(static_cast<double>(h) * ratio[1]);
  return CropBox{double((width - w) / 2), double((height - h) / 2), double(w), double(h)};
}

CropBox center_crop_box(int64_t height, int64_t width, int64_t img_size, double crop_pct) {
  const int64_t short_side = static_cast<int64_t>(std::floor(static_cast<double>(img_size) / crop_pct));
  // Resized size: shorter side = short_side, longer side truncated as torchvision does.
  int64_t rh, rw;
  if (height <= width) {
    rh = short_side;
    rw = static_cast<int64_t>(static_cast<double>(short_side) * width / height);
  } else {
    rw = short_side;
    rh = static_cast<int64_t>(static_cast<double>(short_side) * height / width);
  }
  const double top = std::nearbyint((rh - img_size) / 2.0), left = std::nearbyint((rw - img_size) / 2.0);
  const double sy = static_cast<double>(height) / rh, sx = static_cast<double>(width) / rw;
  return CropBox{left * sx, top * sy, img_size * sx, img_size * sy};
}

Transform::Transform(TransformOptions opts) : opts_(std::move(opts)), random_erasing_(opts_.random_erasing) {
  HG_CHECK(opts_.img_size > 0, "Transform: img_size must be positive, got ", opts_.img_size);
  HG_CHECK(opts_.crop_pct > 0 && opts_.crop_pct <= 1, "Transform: crop_pct must be in (0, 1], got ", opts_.crop_pct);
  HG_CHECK(opts_.scale[0] > 0 && opts_.scale[0] <= opts_.scale[1] && opts_.scale[1] <= 1,
           "Transform: scale must be 0 < min <= max <= 1, got [", opts_.scale[0], ", ", opts_.scale[1], "]");
  HG_CHECK(opts_.ratio[0] > 0 && opts_.ratio[0] <= opts_.ratio[1], "Transform: ratio must be 0 < min <= max, got [",
           opts_.ratio[0], ", ", opts_.ratio[1], "]");
  HG_CHECK(!opts_.mean.empty() && opts_.mean.size() == opts_.std.size(), "Transform: mean has ",
           opts_.mean.size(), " values, std has ", opts_.std.size());
  for (size_t c = 0; c < opts_.mean.size(); ++c) {
    HG_CHECK(opts_.std[c] > 0, "Transform: std[", c, "] must be > 0, got ", opts_.std[c]);
    gain_.push_back(static_cast<float>(1.0 / (255.0 * opts_.std[c])));
    bias_.push_back(static_cast<float>(-opts_.mean[c] / opts_.std[c]));
  }
  for (int64_t x = 0; x < opts_.img_size; ++x) {
    gain_row_.insert(gain_row_.end(), gain_.begin(), gain_.end());
    bias_row_.insert(bias_row_.end(), bias_.begin(), bias_.end());
  }
  if (opts_.interpolation != "random") parse_interp(opts_.interpolation);  // throws on a bad name
  if (!opts_.auto_augment.empty()) {
    AugmentParams params;
    for (size_t c = 0; c < 3; ++c)  // timm's img_mean: the mean as an 8-bit colour
      params.fill[c] = static_cast<uint8_t>(
          std::min(255.0, std::round(255.0 * opts_.mean[std::min(c, opts_.mean.size() - 1)])));
    if (opts_.interpolation != "random") params.interp = parse_interp(opts_.interpolation);
    rand_augment_ = std::make_shared<RandAugment>(parse_rand_augment(opts_.auto_augment), params);
  } else if (opts_.color_jitter > 0) {  // timm turns color jitter off when RandAugment is on
    color_jitter_ = std::make_shared<ColorJitter>(opts_.color_jitter, opts_.color_jitter, opts_.color_jitter);
  }
}

int64_t Transform::output_numel() const {
  return opts_.img_size * opts_.img_size * static_cast<int64_t>(opts_.mean.size());
}

CropPlan Transform::plan(int64_t height, int64_t width, Generator& rng) const {
  CropPlan p;
  if (!opts_.train) {
    p.box = center_crop_box(height, width, opts_.img_size, opts_.crop_pct);
    return p;
  }
  p.box = random_resized_crop_box(height, width, opts_.scale, opts_.ratio, rng);
  p.flip = opts_.hflip > 0 && rng.uniform() < opts_.hflip;
  if (opts_.interpolation == "random") p.interp = rng.randint(2) == 0 ? Interp::bilinear : Interp::bicubic;
  else p.interp = parse_interp(opts_.interpolation);
  if (rand_augment_ || color_jitter_ || random_erasing_.active()) p.augment_seed = rng.next_u64();
  return p;
}

void Transform::apply(const Image& img, Generator& rng, float* out) const {
  apply_plan(img, plan(img.height, img.width, rng), out);
}

Image Transform::augment_8bit(const Image& crop, Generator& rng) const {
  if (rand_augment_) return rand_augment_->apply(crop, rng);
  if (color_jitter_) return color_jitter_->apply(crop, rng);
  return crop;
}

void Transform::apply_plan(const Image& img, const CropPlan& plan, float* out) const {
  const int64_t C = static_cast<int64_t>(opts_.mean.size());
  HG_CHECK(img.channels == C, "Transform: image has ", img.channels, " channels, mean/std have ", C);
  const int64_t S = opts_.img_size;
  // out[i] = pixel[i] * gain[c] + bias[c], one row at a time against the row-long gain / bias
  // patterns (contiguous, so the loop vectorises).
  auto normalise = [&](const auto* pixel) {
    const int64_t n = S * C;
    const float* g = gain_row_.data();
    const float* b = bias_row_.data();
    for (int64_t y = 0; y < S; ++y) {
      const auto* in = pixel + y * n;
      float* o = out + y * n;
      for (int64_t j = 0; j < n; ++j) o[j] = static_cast<float>(in[j]) * g[j] + b[j];
    }
  };
  resample(img, plan.box, S, S, plan.flip, plan.interp, out);
  if (!opts_.train) {
    normalise(out);
    return;
  }
  Generator rng(plan.augment_seed);
  if (rand_augment_ || color_jitter_) {
    Image crop{S, S, C, std::vector<uint8_t>(static_cast<size_t>(S * S * C))};
    round_to_u8(out, S * S * C, crop.pixels.data());  // PIL rounds the resized image to 8 bits
    const Image aug = augment_8bit(crop, rng);
    normalise(aug.pixels.data());
  } else {
    normalise(out);
  }
  random_erasing_.apply(out, S, S, C, rng);
}

}  // namespace hg::data
