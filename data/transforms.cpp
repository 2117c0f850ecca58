// Random resized crop, center crop, resampling, the 8-bit augmentations and normalisation, random
// erasing (see transforms.h).
#include "data/transforms.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hg::data {

namespace {

// Filter taps of one output axis. Output i reads input pixels first[i] .. first[i] + count[i] - 1
// with weights w[i * K ..], K = the largest count; the weights past count[i] are 0. The vertical
// pass uses count[i] taps; the horizontal pass runs all K so that every output pixel takes the same
// loop. Adding 0 * v (v finite) to a float sum leaves its value unchanged, so the padded sums equal
// the unpadded ones. Flat arrays: no allocation per output pixel.
struct Taps {
  int64_t K = 0;
  std::vector<int64_t> first, count;
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
  // At most 2 * support + 1 taps each (plus one for rounding): the row stride of w.
  const int64_t max_taps =
      interp == Interp::nearest ? 1 : static_cast<int64_t>(std::ceil(2 * support)) + 2;
  Taps t;
  t.first.resize(static_cast<size_t>(out_len));
  t.count.resize(static_cast<size_t>(out_len));
  std::vector<float> w(static_cast<size_t>(out_len * max_taps), 0.0f);
  double v[64];
  std::vector<double> big;  // for filters wider than v (shrinking by more than ~15x)
  for (int64_t i = 0; i < out_len; ++i) {
    const double center = start + (static_cast<double>(i) + 0.5) * scale;  // pixel j has center j + 0.5
    int64_t lo = std::max<int64_t>(0, static_cast<int64_t>(std::floor(center - support)));
    const int64_t hi = interp == Interp::nearest  // nearest: no taps, the one pixel is chosen below
                           ? lo
                           : std::min<int64_t>(in_len, static_cast<int64_t>(std::ceil(center + support)));
    const int64_t n = std::max<int64_t>(hi - lo, 0);
    double* vals = v;
    if (n > 64) {
      big.resize(static_cast<size_t>(n));
      vals = big.data();
    }
    double sum = 0;
    for (int64_t j = lo; j < hi; ++j) {
      const double d = (static_cast<double>(j) + 0.5 - center) / stretch;
      vals[j - lo] = interp == Interp::bicubic ? cubic_half(d) : triangle(d);
      sum += vals[j - lo];
    }
    int64_t count = n;
    if (sum == 0) {  // nearest, or a center outside the image (not for boxes inside it)
      lo = std::clamp<int64_t>(static_cast<int64_t>(std::floor(center)), 0, in_len - 1);
      vals = v;
      v[0] = 1.0;
      count = 1;
      sum = 1;
    }
    HG_CHECK(count <= max_taps, "resample: ", count, " taps for output ", i, ", room for ",
             max_taps);
    t.first[size_t(i)] = lo;
    t.count[size_t(i)] = count;
    t.K = std::max(t.K, count);
    for (int64_t k = 0; k < count; ++k)  // edges renormalise instead of reading outside
      w[size_t(i * max_taps + k)] = static_cast<float>(vals[k] / sum);
  }
  // Repack with stride K.
  t.w.assign(static_cast<size_t>(out_len * t.K), 0.0f);
  for (int64_t i = 0; i < out_len; ++i)
    std::copy_n(w.begin() + i * max_taps, t.K, t.w.begin() + i * t.K);
  return t;
}

// GCC on x86-64: an AVX2 clone of the pixel loops beside the baseline (SSE2) one, picked at load
// time. Not "arch=x86-64-v3": that brings FMA, and a fused multiply-add would change the sums.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HG_RESAMPLE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define HG_RESAMPLE_CLONES
#endif

// The vertical pass of one output row: r[j] = sum over k of w[k] * rows[k][j], k = 0 .. n - 1 in
// order, for j in [0, span). Taps are taken G at a time (r read and written once per group, not
// once per tap); within a group each value is still (((r + w0 a0) + w1 a1) + ...), the plain order.
template <int G, bool First>
[[gnu::always_inline]] inline void vertical_group(const uint8_t* const* rows, const float* w,
                                                  float* __restrict r, int64_t span) {
  const uint8_t* __restrict a[G];
  float wk[G];
  for (int k = 0; k < G; ++k) {
    a[k] = rows[k];
    wk[k] = w[k];
  }
  for (int64_t j = 0; j < span; ++j) {
    float s = First ? 0.0f : r[j];
#pragma GCC unroll 4
    for (int k = 0; k < G; ++k) s += wk[k] * static_cast<float>(a[k][j]);
    r[j] = s;
  }
}

template <int G>
[[gnu::always_inline]] inline void vertical_group(const uint8_t* const* rows, const float* w,
                                                  bool first, float* r, int64_t span) {
  if (first)
    vertical_group<G, true>(rows, w, r, span);
  else
    vertical_group<G, false>(rows, w, r, span);
}

HG_RESAMPLE_CLONES __attribute__((noinline)) void vertical_row(const uint8_t* const* rows,
                                                               const float* w, int64_t n, float* r,
                                                               int64_t span) {
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) vertical_group<4>(rows + k, w + k, k == 0, r, span);
  switch (n - k) {
    case 3: vertical_group<3>(rows + k, w + k, k == 0, r, span); break;
    case 2: vertical_group<2>(rows + k, w + k, k == 0, r, span); break;
    case 1: vertical_group<1>(rows + k, w + k, k == 0, r, span); break;
    default: break;
  }
}

// The horizontal pass of one output row, 3 channels: each tap adds w * (R, G, B, next R) to a
// 4-lane sum (GCC's vector extension: SSE on x86, NEON on ARM), the 4th lane unused; the same
// per-channel sums, in the same order, as one accumulator per channel. Four output pixels at a
// time, so that four independent sums hide the add latency. `r` has 1 + 3 K readable floats past
// the last tap any output uses (zeros).
using Float4 = float __attribute__((vector_size(16)));
inline Float4 load4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
HG_RESAMPLE_CLONES __attribute__((noinline)) void horizontal_row3(const float* r, const Taps& tx,
                                                                  int64_t x0, int64_t out_w,
                                                                  bool flip, float* orow) {
  const int64_t K = tx.K;
  auto store = [&](int64_t ox, Float4 acc) {
    float* o = orow + (flip ? out_w - 1 - ox : ox) * 3;
    o[0] = acc[0];
    o[1] = acc[1];
    o[2] = acc[2];
  };
  int64_t ox = 0;
  for (; ox + 4 <= out_w; ox += 4) {
    const float* w = tx.w.data() + ox * K;
    const float* p0 = r + (tx.first[size_t(ox)] - x0) * 3;
    const float* p1 = r + (tx.first[size_t(ox + 1)] - x0) * 3;
    const float* p2 = r + (tx.first[size_t(ox + 2)] - x0) * 3;
    const float* p3 = r + (tx.first[size_t(ox + 3)] - x0) * 3;
    Float4 a0 = {0.0f, 0.0f, 0.0f, 0.0f}, a1 = a0, a2 = a0, a3 = a0;
    for (int64_t k = 0; k < K; ++k) {
      a0 += w[k] * load4(p0 + 3 * k);
      a1 += w[K + k] * load4(p1 + 3 * k);
      a2 += w[2 * K + k] * load4(p2 + 3 * k);
      a3 += w[3 * K + k] * load4(p3 + 3 * k);
    }
    store(ox, a0);
    store(ox + 1, a1);
    store(ox + 2, a2);
    store(ox + 3, a3);
  }
  for (; ox < out_w; ++ox) {
    const float* w = tx.w.data() + ox * K;
    const float* p = r + (tx.first[size_t(ox)] - x0) * 3;
    Float4 acc = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t k = 0; k < K; ++k) acc += w[k] * load4(p + 3 * k);
    store(ox, acc);
  }
}

// Any channel count: one accumulator per channel.
void horizontal_row(const float* r, const Taps& tx, int64_t x0, int64_t out_w, bool flip, int64_t C,
                    float* orow) {
  const int64_t K = tx.K;
  for (int64_t ox = 0; ox < out_w; ++ox) {
    const float* wx = tx.w.data() + ox * K;
    const float* p = r + (tx.first[size_t(ox)] - x0) * C;
    float* o = orow + (flip ? out_w - 1 - ox : ox) * C;
    for (int64_t c = 0; c < C; ++c) {
      float acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += wx[k] * p[k * C + c];
      o[c] = acc;
    }
  }
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
  HG_CHECK(src.pixels.size() == static_cast<size_t>(src.height * src.width * src.channels),
           "resample: image holds ", src.pixels.size(), " bytes, expected ", src.height, "x",
           src.width, "x", src.channels);
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
  // columns in use (contiguous, so the compiler vectorises it); then the horizontal pass on that
  // row. The row's zero tail is what the horizontal pass's padded taps (and its 4th lane) read.
  std::vector<float> row(static_cast<size_t>(span + (tx.K + 1) * C + 1), 0.0f);
  std::vector<const uint8_t*> rows(static_cast<size_t>(ty.K));
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const int64_t fy = ty.first[size_t(oy)], ny = ty.count[size_t(oy)];
    for (int64_t k = 0; k < ny; ++k)
      rows[size_t(k)] = src.pixels.data() + ((fy + k) * src.width + x0) * C;
    vertical_row(rows.data(), ty.w.data() + oy * ty.K, ny, row.data(), span);
    float* orow = out + oy * out_w * C;
    if (C == 3)
      horizontal_row3(row.data(), tx, x0, out_w, flip, orow);
    else
      horizontal_row(row.data(), tx, x0, out_w, flip, C, orow);
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
  // at least one pixel: a ratio bound beyond twice the image's side would round a side to 0
  if (in_ratio < ratio[0])
    h = std::max<int64_t>(1, std::llround(static_cast<double>(w) / ratio[0]));
  else if (in_ratio > ratio[1])
    w = std::max<int64_t>(1, std::llround(static_cast<double>(h) * ratio[1]));
  return CropBox{double((width - w) / 2), double((height - h) / 2), double(w), double(h)};
}

namespace {
// One axis of CenterCrop(S) on a side resized to `resized` pixels: the crop's first pixel in the
// resized image (negative when padded) and the padding before and after (torchvision's
// center_crop: (S - resized) // 2 before, the rest after; else the offset rounded half to even).
struct CropSide {
  double start = 0;
  int64_t before = 0, after = 0;
};
CropSide crop_side(int64_t resized, int64_t S) {
  if (resized >= S) return {std::nearbyint(static_cast<double>(resized - S) / 2.0), 0, 0};
  const int64_t before = (S - resized) / 2;
  return {-static_cast<double>(before), before, S - resized - before};
}

// Sets the padded pixels of an S x S x C output to 0 (the pixel torchvision pads with). `pad` gives
// the sides of the unflipped output: left and right swap places when `flip`.
void pad_with_zero(const CropPadding& pad, int64_t S, int64_t C, bool flip, float* out) {
  HG_CHECK(pad.top >= 0 && pad.bottom >= 0 && pad.left >= 0 && pad.right >= 0 &&
               pad.top + pad.bottom <= S && pad.left + pad.right <= S,
           "Transform: padding (top ", pad.top, ", bottom ", pad.bottom, ", left ", pad.left,
           ", right ", pad.right, ") does not fit the ", S, "x", S, " output");
  const int64_t left = flip ? pad.right : pad.left, right = flip ? pad.left : pad.right;
  for (int64_t y = 0; y < S; ++y) {
    float* row = out + y * S * C;
    if (y < pad.top || y >= S - pad.bottom) {
      std::fill(row, row + S * C, 0.0f);
      continue;
    }
    std::fill(row, row + left * C, 0.0f);
    std::fill(row + (S - right) * C, row + S * C, 0.0f);
  }
}
}  // namespace

CenterCrop center_crop(int64_t height, int64_t width, int64_t img_size, double crop_pct) {
  const double resized = std::floor(static_cast<double>(img_size) / crop_pct);
  // at most 2^30: the resized sides (the longer one scaled by the aspect) stay far inside int64
  HG_CHECK(resized >= 1 && resized <= kMaxResizedSide, "center_crop: crop_pct ", crop_pct,
           " resizes the shorter side to floor(", img_size, " / ", crop_pct, ") = ", resized,
           " pixels, outside [1, 2^30]");
  const auto short_side = static_cast<int64_t>(resized);
  // Resized size: shorter side = short_side, longer side truncated as torchvision does.
  int64_t rh, rw;
  if (height <= width) {
    rh = short_side;
    rw = static_cast<int64_t>(static_cast<double>(short_side) * width / height);
  } else {
    rw = short_side;
    rh = static_cast<int64_t>(static_cast<double>(short_side) * height / width);
  }
  const CropSide v = crop_side(rh, img_size), u = crop_side(rw, img_size);
  const double sy = static_cast<double>(height) / rh, sx = static_cast<double>(width) / rw;
  CenterCrop c;
  c.box = CropBox{u.start * sx, v.start * sy, img_size * sx, img_size * sy};
  c.pad = CropPadding{v.before, v.after, u.before, u.after};
  return c;
}

CropBox center_crop_box(int64_t height, int64_t width, int64_t img_size, double crop_pct) {
  return center_crop(height, width, img_size, crop_pct).box;
}

Transform::Transform(TransformOptions opts) : opts_(std::move(opts)), random_erasing_(opts_.random_erasing) {
  HG_CHECK(opts_.img_size > 0, "Transform: img_size must be positive, got ", opts_.img_size);
  HG_CHECK(opts_.crop_pct > 0, "Transform: crop_pct must be > 0, got ", opts_.crop_pct);
  // crop_pct > 1 resizes the shorter side below img_size (the crop is padded), to a pixel at least.
  const double resized = std::floor(static_cast<double>(opts_.img_size) / opts_.crop_pct);
  HG_CHECK(resized >= 1, "Transform: crop_pct ", opts_.crop_pct,
           " resizes the shorter side to floor(", opts_.img_size, " / ", opts_.crop_pct,
           ") = 0 pixels; it must be at most img_size (", opts_.img_size, ")");
  HG_CHECK(resized <= kMaxResizedSide, "Transform: crop_pct ", opts_.crop_pct,
           " resizes the shorter side to floor(", opts_.img_size, " / ", opts_.crop_pct,
           ") pixels, more than 2^30; it must be at least ", opts_.img_size, " / 2^30");
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
  HG_CHECK(
      opts_.train || opts_.interpolation != "random",
      "Transform: evaluation takes one resize filter (bilinear, bicubic or nearest), not random");
  if (opts_.interpolation != "random") parse_interp(opts_.interpolation);  // throws on a bad name
  if (!opts_.auto_augment.empty()) {
    AugmentParams params;
    for (size_t c = 0; c < 3; ++c)  // timm's img_mean: the mean as an 8-bit colour
      params.fill[c] = static_cast<uint8_t>(
          std::min(255.0, std::round(255.0 * opts_.mean[std::min(c, opts_.mean.size() - 1)])));
    if (opts_.interpolation != "random") params.interp = parse_interp(opts_.interpolation);
    rand_augment_ = std::make_shared<RandAugment>(parse_rand_augment(opts_.auto_augment), params);
  } else if (!opts_.color_jitter.empty()) {  // timm turns color jitter off when RandAugment is on
    const std::array<double, 4> s = color_jitter_strengths(opts_.color_jitter);
    auto jitter = std::make_shared<ColorJitter>(s[0], s[1], s[2], s[3]);
    if (jitter->active()) color_jitter_ = std::move(jitter);
  }
}

int64_t Transform::output_numel() const {
  return opts_.img_size * opts_.img_size * static_cast<int64_t>(opts_.mean.size());
}

CropPlan Transform::plan(int64_t height, int64_t width, Generator& rng) const {
  CropPlan p;
  if (!opts_.train) {
    const CenterCrop c = center_crop(height, width, opts_.img_size, opts_.crop_pct);
    p.box = c.box;
    p.pad = c.pad;
    p.interp = parse_interp(opts_.interpolation);
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

void Transform::apply_plan(const Image& img, const CropPlan& plan, float* out,
                           Generator* erase_rng) const {
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
  if (plan.pad.any()) pad_with_zero(plan.pad, S, C, plan.flip, out);
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
  if (erase_rng != nullptr)
    *erase_rng = rng;
  else
    erase(out, rng);
}

void Transform::erase(float* out, Generator& rng) const {
  if (!opts_.train) return;
  const int64_t S = opts_.img_size, C = static_cast<int64_t>(opts_.mean.size());
  random_erasing_.apply(out, S, S, C, rng);
}

}  // namespace hg::data
