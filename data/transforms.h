// Image transforms of timm's create_transform, from an 8-bit image to a normalised float HWC array:
//   train: RandomResizedCrop(img_size, scale, ratio, bilinear) -> horizontal flip (p = hflip)
//   eval:  Resize(shorter side -> floor(img_size / crop_pct)) -> CenterCrop(img_size)
//   both:  x = (pixel / 255 - mean[c]) / std[c]
// Crops are never materialised: a crop box (in source pixels, fractional for the eval resize) is
// resampled straight to the output size. Resampling is separable bilinear with a triangle filter
// widened by the shrink factor when downscaling (antialiased, like PIL's BILINEAR), so it equals
// resize-then-crop and an unscaled box copies pixels exactly.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/random.h"
#include "data/image.h"

namespace hg::data {

struct TransformOptions {
  int64_t img_size = 224;        ///< output side, pixels
  bool train = false;            ///< random resized crop + flip (train) or resize + center crop (eval)
  double crop_pct = 0.875;       ///< eval: fraction of the resized shorter side kept, in (0, 1]
  double hflip = 0.5;            ///< train: flip probability
  std::array<double, 2> scale{0.08, 1.0};              ///< train: crop area fraction range
  std::array<double, 2> ratio{3.0 / 4.0, 4.0 / 3.0};   ///< train: crop aspect (w / h) range
  std::vector<double> mean{0.485, 0.456, 0.406};       ///< per channel, pixel values in [0, 1]
  std::vector<double> std{0.229, 0.224, 0.225};        ///< per channel, > 0
};

/// The random part of a transform: the source box and whether to flip.
struct CropPlan {
  CropBox box;
  bool flip = false;
};

class Transform {
 public:
  /// Throws hg::Error for a non-positive img_size, crop_pct outside (0, 1], a bad range, or std <= 0.
  explicit Transform(TransformOptions opts);

  /// Transforms `img` (channels == mean.size()) into `out`: img_size * img_size * channels floats,
  /// (H, W, C) row-major. Draws from `rng` in train mode only. Throws hg::Error on a channel mismatch.
  /// Equals apply_plan(img, plan(img.height, img.width, rng), out).
  void apply(const Image& img, Generator& rng, float* out) const;
  /// The crop box (source pixels) and flip for an image of (height, width): train draws the
  /// random-resized-crop box then the flip from `rng` (in that order), eval takes the center crop.
  CropPlan plan(int64_t height, int64_t width, Generator& rng) const;
  /// Resamples plan.box of `img` to img_size x img_size (mirrored when plan.flip) and normalises it
  /// into `out` as apply() does. The box may be in the pixels of a region or a reduced-scale decode
  /// (data/image_region.h). Throws hg::Error on a channel mismatch.
  void apply_plan(const Image& img, const CropPlan& plan, float* out) const;
  /// Floats written by apply().
  int64_t output_numel() const;
  const TransformOptions& options() const { return opts_; }

 private:
  TransformOptions opts_;
  std::vector<float> gain_, bias_;  // out = pixel * gain + bias, per channel
};

/// torchvision's RandomResizedCrop.get_params: up to 10 tries of an area fraction in `scale` and a
/// log-uniform aspect in `ratio`; if none fits, the largest centered crop with aspect clamped to
/// `ratio`. Integer box inside (height, width).
CropBox random_resized_crop_box(int64_t height, int64_t width, const std::array<double, 2>& scale,
                                const std::array<double, 2>& ratio, Generator& rng);

/// The source box of Resize(shorter side = floor(img_size / crop_pct)) then CenterCrop(img_size),
/// with torchvision's rounding (long side truncated, crop offset rounded half to even).
CropBox center_crop_box(int64_t height, int64_t width, int64_t img_size, double crop_pct);

/// Pixels beyond a box of `box_len` source pixels (resampled to `out_len`) that resample_bilinear may
/// read on each side: the filter's half-width, rounded up, plus one.
int64_t resample_reach(double box_len, int64_t out_len);

/// Resamples `box` of `src` to (out_h, out_w, src.channels) floats in pixel units [0, 255], mirrored
/// left-right when `flip`. See the file comment for the filter.
void resample_bilinear(const Image& src, const CropBox& box, int64_t out_h, int64_t out_w, bool flip,
                       float* out);

}  // namespace hg::data
