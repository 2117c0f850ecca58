// Mixup (Zhang et al. 2017) and CutMix (Yun et al. 2019) on a batch, as timm's Mixup does it
// (config keys `mixup`, `cutmix`, `cutmix_minmax`, `mixup_prob`, `mixup_switch_prob`, `mixup_mode`,
// `smoothing`): image i is mixed with image N - 1 - i (the batch flipped), and the targets become
//   target_i = lam_i * smooth(y_i) + (1 - lam_i) * smooth(y_{N-1-i}),
//   smooth(y) = one-hot(y) * (1 - smoothing) + smoothing / num_classes.
// Parameters are drawn per batch ("batch"), per pair i, N-1-i ("pair", both get the same box or
// lam), or per image ("elem"). With probability mixup_prob a draw mixes at all; when both mixup and
// cutmix are on, cutmix is chosen with probability switch_prob. lam ~ Beta(alpha, alpha) of the
// chosen method. Mixup: x_i = lam x_i + (1 - lam) x_j. CutMix: a box of area (1 - lam) of the image
// (side sqrt(1 - lam) of H and W, centre uniform, clipped to the image) is copied from x_j, and lam
// is corrected to 1 - box area / image area; with cutmix_minmax the box sides are uniform fractions
// in [min, max) of H and W instead (and cutmix is on with alpha 1). Mixing reads the unmixed batch.
// The batch size must be even (timm asserts it too).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/random.h"

namespace hg::data {

struct MixupOptions {
  double mixup_alpha = 0.0;                            ///< mixup: Beta(alpha, alpha); on when > 0
  double cutmix_alpha = 0.0;                           ///< cutmix: Beta(alpha, alpha); on when > 0
  std::optional<std::array<double, 2>> cutmix_minmax;  ///< box side fractions; turns cutmix on
  double prob = 1.0;           ///< chance that a batch / pair / image is mixed
  double switch_prob = 0.5;    ///< chance of cutmix instead of mixup when both are on
  std::string mode = "batch";  ///< "batch" | "pair" | "elem"
  double label_smoothing = 0.1;
  int64_t num_classes = 1000;
};

/// What one image got, for tests: lam (its own weight) and the cutmix box (rows [y0, y1),
/// columns [x0, x1)); cutmix false means a mixup blend (or nothing when lam == 1).
struct MixDraw {
  double lam = 1.0;
  bool cutmix = false;
  int64_t y0 = 0, y1 = 0, x0 = 0, x1 = 0;
};

class Mixup {
 public:
  /// Throws hg::Error for bad alphas, probabilities, mode, minmax range or num_classes.
  explicit Mixup(MixupOptions opts);
  /// mixup or cutmix is on (otherwise apply only writes smoothed one-hot targets).
  bool active() const { return opts_.mixup_alpha > 0 || cutmix_alpha_ > 0; }

  /// Mixes `images` (N, H, W, C) floats in place and writes `targets` (N, num_classes) floats from
  /// `labels` (N, each in [0, num_classes)). `enabled` false (timm: after mixup_off_epoch) leaves
  /// the images alone and writes smoothed one-hot targets. Returns what each image got. Throws
  /// hg::Error for an odd N or a label out of range.
  std::vector<MixDraw> apply(float* images, int64_t N, int64_t H, int64_t W, int64_t C,
                             const int64_t* labels, float* targets, Generator& gen,
                             bool enabled = true) const;
  const MixupOptions& options() const { return opts_; }

 private:
  MixDraw draw(int64_t H, int64_t W, Generator& gen) const;  // one (lam, method, box) draw

  MixupOptions opts_;
  double cutmix_alpha_;  // 1 when cutmix_minmax is set
};

/// Beta(a, a) from two gamma draws.
double sample_beta(double a, Generator& gen);

}  // namespace hg::data
