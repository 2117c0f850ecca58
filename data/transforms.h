// Image transforms of timm's create_transform, from an 8-bit image to a normalised float HWC array:
//   train: RandomResizedCrop(img_size, scale, ratio, interpolation) -> horizontal flip (p = hflip)
//          -> RandAugment (auto_augment) or else ColorJitter (color_jitter), on the 8-bit image
//          -> normalise -> RandomErasing (random_erasing)
//   eval:  Resize(shorter side -> floor(img_size / crop_pct)) -> CenterCrop(img_size) (bilinear);
//          crop_pct > 1 resizes below img_size and CenterCrop pads with torchvision's zero pixel
//   both:  x = (pixel / 255 - mean[c]) / std[c]
// Crops are never materialised: a crop box (in source pixels, fractional for the eval resize) is
// resampled straight to the output size. Resampling is separable with PIL's filters widened by the
// shrink factor when downscaling (antialiased): bilinear (triangle, support 1), bicubic (a = -0.5,
// support 2), nearest; so it equals resize-then-crop and an unscaled box copies pixels exactly.
// Without RandAugment / ColorJitter the resampled values stay floats; with them the crop is rounded
// to 8 bits first (PIL hands an 8-bit image to the ops).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/random.h"
#include "data/color_jitter.h"
#include "data/image.h"
#include "data/image_ops.h"
#include "data/rand_augment.h"
#include "data/random_erasing.h"

namespace hg::data {

struct TransformOptions {
  int64_t img_size = 224;        ///< output side, pixels
  bool train = false;            ///< random resized crop + flip (train) or resize + center crop (eval)
  /// eval: the resized shorter side is floor(img_size / crop_pct); > 1 (timm accepts it) makes it
  /// shorter than img_size and pads the crop (CropPadding)
  double crop_pct = 0.875;
  double hflip = 0.5;            ///< train: flip probability
  std::array<double, 2> scale{0.08, 1.0};              ///< train: crop area fraction range
  std::array<double, 2> ratio{3.0 / 4.0, 4.0 / 3.0};   ///< train: crop aspect (w / h) range
  std::vector<double> mean{0.485, 0.456, 0.406};       ///< per channel, pixel values in [0, 1]
  std::vector<double> std{0.229, 0.224, 0.225};        ///< per channel, > 0
  /// The resize filter, "bilinear" | "bicubic" | "nearest", or for train "random" (bilinear or
  /// bicubic per image); train: of the crop and RandAugment's geometric ops (random: drawn per op);
  /// eval: of the resize.
  std::string interpolation = "bilinear";
  std::string auto_augment;   ///< train: RandAugment spec (data/rand_augment.h); "" = none
  /// train, when auto_augment is "": ColorJitter's strengths as timm gives them, one number
  /// (brightness, contrast, saturation) or 3 or 4 (..., hue) (color_jitter_strengths); empty or
  /// zeros = off
  std::vector<double> color_jitter;
  RandomErasingOptions random_erasing;  ///< train: probability 0 = off
};

/// Output pixels on each side of the crop that the resized image does not reach: torchvision's
/// CenterCrop pads an image smaller than the crop (evaluation with crop_pct > 1) with 0, (side - n)
/// / 2 pixels before and the rest after. They hold the zero pixel normalised, -mean[c] / std[c], as
/// timm's evaluation transform gives them. Sides of the unflipped output.
struct CropPadding {
  int64_t top = 0, bottom = 0, left = 0, right = 0;
  bool any() const { return top > 0 || bottom > 0 || left > 0 || right > 0; }
};

/// The random part of a transform: the source box, whether to flip, the crop filter, and the seed
/// of the image's 8-bit ops and random erasing (drawn with the box, so a plan fixes the whole
/// augmentation of an image). With padding, the box reaches past the image by the padded pixels.
struct CropPlan {
  CropBox box;
  CropPadding pad;  ///< eval with crop_pct > 1 only
  bool flip = false;
  Interp interp = Interp::bilinear;
  uint64_t augment_seed = 0;
};

class Transform {
 public:
  /// Throws hg::Error for a non-positive img_size, a crop_pct <= 0 or one that resizes to less than
  /// a pixel (floor(img_size / crop_pct) < 1), a bad range, or std <= 0.
  explicit Transform(TransformOptions opts);

  /// Transforms `img` (channels == mean.size()) into `out`: img_size * img_size * channels floats,
  /// (H, W, C) row-major. Draws from `rng` in train mode only. Throws hg::Error on a channel mismatch.
  /// Equals apply_plan(img, plan(img.height, img.width, rng), out).
  void apply(const Image& img, Generator& rng, float* out) const;
  /// The crop box (source pixels) and flip for an image of (height, width): train draws the
  /// random-resized-crop box, the flip, the filter (interpolation "random") and, when an 8-bit op
  /// or random erasing is on, the augment seed from `rng` (in that order); eval takes the center
  /// crop (center_crop).
  CropPlan plan(int64_t height, int64_t width, Generator& rng) const;
  /// Resamples plan.box of `img` to img_size x img_size (mirrored when plan.flip), sets plan.pad's
  /// pixels to 0, and normalises it into `out` as apply() does. The box may be in the pixels of a
  /// region or a reduced-scale decode (data/image_region.h). Throws hg::Error on a channel
  /// mismatch. With `erase_rng` given, random erasing is left out and *erase_rng is the generator
  /// it would have drawn from (the caller erases later with erase(), e.g. after mixing the batch);
  /// the result is the same as without.
  void apply_plan(const Image& img, const CropPlan& plan, float* out,
                  Generator* erase_rng = nullptr) const;
  /// Random erasing of one transformed image `out` (img_size^2 * channels floats), drawing from
  /// `rng` as apply_plan would have; nothing when reprob is 0 or in eval.
  void erase(float* out, Generator& rng) const;
  /// The 8-bit stage of training: RandAugment, or ColorJitter, or the image unchanged.
  Image augment_8bit(const Image& crop, Generator& rng) const;
  /// Floats written by apply().
  int64_t output_numel() const;
  const TransformOptions& options() const { return opts_; }

 private:
  TransformOptions opts_;
  std::vector<float> gain_, bias_;  // out = pixel * gain + bias, per channel
  std::vector<float> gain_row_, bias_row_;  // the same repeated over one output row (img_size * C)
  std::shared_ptr<const RandAugment> rand_augment_;  // null when off
  std::shared_ptr<const ColorJitter> color_jitter_;  // null when off (or when RandAugment is on)
  RandomErasing random_erasing_;
};

/// torchvision's RandomResizedCrop.get_params: up to 10 tries of an area fraction in `scale` and a
/// log-uniform aspect in `ratio`; if none fits, the largest centered crop with aspect clamped to
/// `ratio`. Integer box inside (height, width).
CropBox random_resized_crop_box(int64_t height, int64_t width, const std::array<double, 2>& scale,
                                const std::array<double, 2>& ratio, Generator& rng);

/// Resize(shorter side = floor(img_size / crop_pct)) then CenterCrop(img_size), with torchvision's
/// rounding (long side truncated, crop offset rounded half to even): the source box, and the
/// padding of a resized side shorter than img_size (crop_pct > 1; the box then starts before the
/// image and ends after it, so that its pixels inside the padding resample the resized image's).
/// The largest resized shorter side center_crop takes (crop_pct >= img_size / 2^30): beyond it the
/// resized sides leave int64.
inline constexpr double kMaxResizedSide = double(int64_t(1) << 30);
struct CenterCrop {
  CropBox box;
  CropPadding pad;
};
/// Throws hg::Error when floor(img_size / crop_pct) is outside [1, kMaxResizedSide].
CenterCrop center_crop(int64_t height, int64_t width, int64_t img_size, double crop_pct);
/// center_crop(...).box.
CropBox center_crop_box(int64_t height, int64_t width, int64_t img_size, double crop_pct);

/// Pixels beyond a box of `box_len` source pixels (resampled to `out_len`) that resample may read
/// on each side with any of its filters: the widest (bicubic) half-width, rounded up, plus one.
int64_t resample_reach(double box_len, int64_t out_len);

/// Resamples `box` of `src` to (out_h, out_w, src.channels) floats in pixel units (bicubic can
/// overshoot [0, 255]), mirrored left-right when `flip`. See the file comment for the filters.
void resample(const Image& src, const CropBox& box, int64_t out_h, int64_t out_w, bool flip,
              Interp interp, float* out);
/// Rounds resampled pixel values to 8 bits as PIL does for the crop that 8-bit ops see: out[i] =
/// lround(in[i]) clamped to [0, 255] (halves away from zero), for n values.
void round_to_u8(const float* in, int64_t n, uint8_t* out);

/// resample() with the bilinear filter.
void resample_bilinear(const Image& src, const CropBox& box, int64_t out_h, int64_t out_w, bool flip,
                       float* out);

}  // namespace hg::data
