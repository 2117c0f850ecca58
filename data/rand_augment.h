// RandAugment (Cubuk et al. 2019) as timm implements it (config key `aa`, e.g.
// "rand-m9-mstd0.5-inc1"): each image gets `n` ops drawn uniformly with replacement from the op
// set; each op is applied with probability `p` at a magnitude drawn from N(m, mstd) (uniform in
// [0, m] when mstd > 100) and clamped to [0, mmax]; the magnitude maps to the op's argument as
// timm's level functions do (M / 10 of the op's range, the sign drawn at random for rotate / shear
// / translate / the increasing enhance ops). Ops work on the 8-bit image (data/image_ops.h), after
// the crop, before normalisation.
//
// Spec string: "rand" then dash-separated sections in any order, a key then a number:
//   m<int>     magnitude (default 10)          n<int>   ops per image (default 2)
//   p<float>   probability of each op (0.5)    mstd<f>  magnitude noise std (0; > 100: uniform)
//   mmax<int>  magnitude upper bound (10)      inc<0|1> increasing-severity op set (0)
// (mmax0 is the default bound, as timm's `magnitude_max or 10` reads it.)
// A section without a digit is ignored (as timm does). Unsupported: AutoAugment policies ("v0",
// "original"), AugMix ("augmix-..."), and the "t" (transform set) section: these are errors.
// Note: timm's parser turns the increasing set on for any `inc` section (bool of the text "0" is
// true); here inc0 means off, as its documentation says.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/random.h"
#include "data/image_ops.h"

namespace hg::data {

/// The most ops per image a spec may ask for (timm sets no bound; its recipes use 2-4).
constexpr int64_t kMaxRandAugmentOps = 100;

struct RandAugmentSpec {
  double magnitude = 10;      ///< M, on timm's 0..10 level scale
  int64_t num_layers = 2;     ///< ops per image, 0 to kMaxRandAugmentOps
  double prob = 0.5;          ///< probability of applying each drawn op
  double magnitude_std = 0;   ///< magnitude noise; infinity = uniform in [0, magnitude]
  double magnitude_max = 10;  ///< magnitudes are clamped to [0, magnitude_max]
  bool increasing = false;    ///< the *Increasing op variants (severity grows with M)
};

/// Parses a spec string (see the file comment). Throws hg::Error naming the spec and the section,
/// or for n outside [0, kMaxRandAugmentOps].
RandAugmentSpec parse_rand_augment(const std::string& spec);

/// timm's op names. The set for inc0: AutoContrast, Equalize, Invert, Rotate, Posterize, Solarize,
/// SolarizeAdd, Color, Contrast, Brightness, Sharpness, ShearX, ShearY, TranslateXRel,
/// TranslateYRel; inc1 uses PosterizeIncreasing, SolarizeIncreasing, ColorIncreasing,
/// ContrastIncreasing, BrightnessIncreasing, SharpnessIncreasing in their places.
enum class AugOp {
  AutoContrast,
  Equalize,
  Invert,
  Rotate,
  Posterize,
  PosterizeIncreasing,
  Solarize,
  SolarizeIncreasing,
  SolarizeAdd,
  Color,
  ColorIncreasing,
  Contrast,
  ContrastIncreasing,
  Brightness,
  BrightnessIncreasing,
  Sharpness,
  SharpnessIncreasing,
  ShearX,
  ShearY,
  TranslateXRel,
  TranslateYRel
};
const char* aug_op_name(AugOp op);
/// The 15 ops RandAugment draws from (increasing or not), in timm's order.
std::vector<AugOp> rand_augment_ops(bool increasing);

/// What the ops need besides the magnitude (timm's hparams of create_transform).
struct AugmentParams {
  Fill fill{128, 128,
            128};  ///< colour brought in by rotate / shear / translate (round(255 * mean))
  std::optional<Interp> interp;  ///< geometric ops' filter; nullopt = bilinear or bicubic at random
  double translate_pct = 0.45;   ///< TranslateRel range: M / 10 * translate_pct of the image side
};

/// The op's argument at magnitude `m` (level functions of timm), drawing the sign from `gen` for
/// the signed ops. Ops without an argument return 0.
double aug_op_argument(AugOp op, double m, const AugmentParams& params, Generator& gen);
/// Applies `op` at magnitude `m` (argument from aug_op_argument, then the filter choice if random).
Image apply_aug_op(AugOp op, const Image& img, double m, const AugmentParams& params,
                   Generator& gen);

class RandAugment {
 public:
  RandAugment(RandAugmentSpec spec, AugmentParams params);
  /// num_layers ops drawn and applied as the file comment says; every draw comes from `gen`.
  Image apply(const Image& img, Generator& gen) const;
  /// One op's magnitude: M with the spec's noise, clamped to [0, magnitude_max].
  double draw_magnitude(Generator& gen) const;
  const RandAugmentSpec& spec() const { return spec_; }

 private:
  RandAugmentSpec spec_;
  AugmentParams params_;
  std::vector<AugOp> ops_;
};

}  // namespace hg::data
