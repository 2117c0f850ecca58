// RandAugment: spec parsing, timm's level-to-argument functions, and the op draw (see
// rand_augment.h).
#include "data/rand_augment.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace hg::data {
namespace {

constexpr double kLevelDenom = 10.0;  // magnitudes are on a 0..10 scale

template <typename T>
T parse_number(const std::string& spec, const std::string& section, const std::string& text) {
  T v{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  HG_CHECK(ec == std::errc() && ptr == end, "RandAugment spec '", spec, "': section '", section,
           "' needs ", std::is_integral_v<T> ? "an integer" : "a number", " after its key, got '",
           text, "'");
  return v;
}

double signed_randomly(double v, Generator& gen) { return gen.uniform() > 0.5 ? -v : v; }

bool is_geometric(AugOp op) {
  return op == AugOp::Rotate || op == AugOp::ShearX || op == AugOp::ShearY ||
         op == AugOp::TranslateXRel || op == AugOp::TranslateYRel;
}

// Python's int(v) for the op arguments, saturated far beyond any argument that means something
// (a magnitude of 1e300 must not overflow the cast).
double trunc_int(double v) {
  return static_cast<double>(static_cast<int64_t>(std::clamp(v, -1e15, 1e15)));
}

}  // namespace

RandAugmentSpec parse_rand_augment(const std::string& spec) {
  std::vector<std::string> sections;
  for (size_t start = 0;;) {
    const size_t dash = spec.find('-', start);
    sections.push_back(
        spec.substr(start, dash == std::string::npos ? std::string::npos : dash - start));
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  HG_CHECK(sections[0] == "rand", "RandAugment spec '", spec,
           "': only RandAugment specs ('rand-...', e.g. rand-m9-mstd0.5-inc1) are supported");
  RandAugmentSpec s;
  for (size_t i = 1; i < sections.size(); ++i) {
    const std::string& sec = sections[i];
    HG_CHECK(sec.empty() || sec[0] != 't', "RandAugment spec '", spec, "': transform-set section '",
             sec, "' is not supported");
    const size_t digit = sec.find_first_of("0123456789");
    if (digit == std::string::npos) continue;  // no value: ignored, as timm does
    const std::string key = sec.substr(0, digit), val = sec.substr(digit);
    if (key == "mstd") {
      s.magnitude_std = parse_number<double>(spec, sec, val);
      if (s.magnitude_std > 100) s.magnitude_std = std::numeric_limits<double>::infinity();
    } else if (key == "mmax") {
      // timm bounds magnitudes by `magnitude_max or 10`: mmax0 keeps the default bound
      const auto mmax = parse_number<int64_t>(spec, sec, val);
      s.magnitude_max = mmax == 0 ? kLevelDenom : static_cast<double>(mmax);
    } else if (key == "inc") {
      s.increasing = parse_number<int64_t>(spec, sec, val) != 0;
    } else if (key == "m") {
      s.magnitude = static_cast<double>(parse_number<int64_t>(spec, sec, val));
    } else if (key == "n") {
      s.num_layers = parse_number<int64_t>(spec, sec, val);
    } else if (key == "p") {
      s.prob = parse_number<double>(spec, sec, val);
    } else {
      throw Error(str("RandAugment spec '", spec, "': unknown section '", sec,
                      "' (expected m, n, p, mstd, mmax or inc followed by a number)"));
    }
  }
  // an upper bound too: n is ops per image, drawn with replacement (timm's recipes use 2-4), and
  // rand-m9-n100000000 held a worker in one image for hours, where no stop signal reaches
  HG_CHECK(s.num_layers >= 0 && s.num_layers <= kMaxRandAugmentOps, "RandAugment spec '", spec,
           "': n (ops per image) must be in [0, ", kMaxRandAugmentOps, "], got ", s.num_layers);
  HG_CHECK(s.prob >= 0 && s.prob <= 1, "RandAugment spec '", spec, "': p must be in [0, 1], got ",
           s.prob);
  HG_CHECK(s.magnitude >= 0 && s.magnitude_max >= 0, "RandAugment spec '", spec,
           "': m and mmax must be >= 0");
  return s;
}

const char* aug_op_name(AugOp op) {
  static const char* names[] = {"AutoContrast",
                                "Equalize",
                                "Invert",
                                "Rotate",
                                "Posterize",
                                "PosterizeIncreasing",
                                "Solarize",
                                "SolarizeIncreasing",
                                "SolarizeAdd",
                                "Color",
                                "ColorIncreasing",
                                "Contrast",
                                "ContrastIncreasing",
                                "Brightness",
                                "BrightnessIncreasing",
                                "Sharpness",
                                "SharpnessIncreasing",
                                "ShearX",
                                "ShearY",
                                "TranslateXRel",
                                "TranslateYRel"};
  return names[static_cast<int>(op)];
}

std::vector<AugOp> rand_augment_ops(bool inc) {
  using A = AugOp;
  return {A::AutoContrast,
          A::Equalize,
          A::Invert,
          A::Rotate,
          inc ? A::PosterizeIncreasing : A::Posterize,
          inc ? A::SolarizeIncreasing : A::Solarize,
          A::SolarizeAdd,
          inc ? A::ColorIncreasing : A::Color,
          inc ? A::ContrastIncreasing : A::Contrast,
          inc ? A::BrightnessIncreasing : A::Brightness,
          inc ? A::SharpnessIncreasing : A::Sharpness,
          A::ShearX,
          A::ShearY,
          A::TranslateXRel,
          A::TranslateYRel};
}

double aug_op_argument(AugOp op, double m, const AugmentParams& params, Generator& gen) {
  const double level = m / kLevelDenom;
  switch (op) {
    case AugOp::AutoContrast:
    case AugOp::Equalize:
    case AugOp::Invert: return 0;
    case AugOp::Rotate: return signed_randomly(level * 30.0, gen);  // degrees in [-30, 30]
    case AugOp::Posterize: return trunc_int(level * 4);             // bits kept
    case AugOp::PosterizeIncreasing: return 4.0 - trunc_int(level * 4);
    case AugOp::Solarize: return std::min(256.0, trunc_int(level * 256));
    case AugOp::SolarizeIncreasing: return 256.0 - std::min(256.0, trunc_int(level * 256));
    case AugOp::SolarizeAdd: return std::min(128.0, trunc_int(level * 110));
    case AugOp::Color:
    case AugOp::Contrast:
    case AugOp::Brightness:
    case AugOp::Sharpness: return level * 1.8 + 0.1;  // enhance factor in [0.1, 1.9]
    case AugOp::ColorIncreasing:
    case AugOp::ContrastIncreasing:
    case AugOp::BrightnessIncreasing:
    case AugOp::SharpnessIncreasing: return std::max(0.1, 1.0 + signed_randomly(level * 0.9, gen));
    case AugOp::ShearX:
    case AugOp::ShearY: return signed_randomly(level * 0.3, gen);
    case AugOp::TranslateXRel:
    case AugOp::TranslateYRel: return signed_randomly(level * params.translate_pct, gen);
  }
  return 0;
}

Image apply_aug_op(AugOp op, const Image& img, double m, const AugmentParams& params,
                   Generator& gen) {
  const double arg = aug_op_argument(op, m, params, gen);
  Interp interp = Interp::bilinear;
  if (is_geometric(op))  // timm draws the filter per call when train_interpolation is random
    interp =
        params.interp ? *params.interp : (gen.randint(2) == 0 ? Interp::bilinear : Interp::bicubic);
  const Fill& fill = params.fill;
  switch (op) {
    case AugOp::AutoContrast: return auto_contrast(img);
    case AugOp::Equalize: return equalize(img);
    case AugOp::Invert: return invert(img);
    case AugOp::Rotate: return rotate(img, arg, interp, fill);
    case AugOp::Posterize:
    case AugOp::PosterizeIncreasing:
      // timm keeps the image at 8 bits or more, and PIL's posterize at 0 bits or fewer keeps none
      // (black): high magnitudes (m > 10 with mmax, or mstd's draws) reach both ends
      return posterize(img, static_cast<int>(std::clamp(arg, 0.0, 8.0)));
    case AugOp::Solarize:
    case AugOp::SolarizeIncreasing: return solarize(img, static_cast<int>(arg));
    case AugOp::SolarizeAdd: return solarize_add(img, static_cast<int>(arg));
    case AugOp::Color:
    case AugOp::ColorIncreasing: return adjust_color(img, arg);
    case AugOp::Contrast:
    case AugOp::ContrastIncreasing: return adjust_contrast(img, arg);
    case AugOp::Brightness:
    case AugOp::BrightnessIncreasing: return adjust_brightness(img, arg);
    case AugOp::Sharpness:
    case AugOp::SharpnessIncreasing: return adjust_sharpness(img, arg);
    case AugOp::ShearX: return shear_x(img, arg, interp, fill);
    case AugOp::ShearY: return shear_y(img, arg, interp, fill);
    case AugOp::TranslateXRel:
      return translate_x(img, arg * static_cast<double>(img.width), interp, fill);
    case AugOp::TranslateYRel:
      return translate_y(img, arg * static_cast<double>(img.height), interp, fill);
  }
  return img;
}

RandAugment::RandAugment(RandAugmentSpec spec, AugmentParams params)
    : spec_(spec), params_(params), ops_(rand_augment_ops(spec.increasing)) {}

Image RandAugment::apply(const Image& img, Generator& gen) const {
  std::vector<AugOp> chosen;  // drawn first, with replacement, as timm's np.random.choice
  for (int64_t layer = 0; layer < spec_.num_layers; ++layer)
    chosen.push_back(ops_[size_t(gen.randint(static_cast<int64_t>(ops_.size())))]);
  Image out = img;
  for (const AugOp op : chosen) {
    if (spec_.prob < 1.0 && gen.uniform() > spec_.prob) continue;
    out = apply_aug_op(op, out, draw_magnitude(gen), params_, gen);
  }
  return out;
}

double RandAugment::draw_magnitude(Generator& gen) const {
  double m = spec_.magnitude;
  if (std::isinf(spec_.magnitude_std))
    m = gen.uniform(0.0, m);
  else if (spec_.magnitude_std > 0)
    m = gen.normal(m, spec_.magnitude_std);
  return std::clamp(m, 0.0, spec_.magnitude_max);
}

}  // namespace hg::data
