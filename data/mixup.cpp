// Mixup / CutMix on a batch (see mixup.h).
#include "data/mixup.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/error.h"

namespace hg::data {

double sample_beta(double a, Generator& gen) {
  std::gamma_distribution<double> gamma(a, 1.0);
  const double x = gamma(gen.engine()), y = gamma(gen.engine());
  return x + y > 0 ? x / (x + y) : 0.5;  // both underflow only for tiny alpha: split evenly
}

Mixup::Mixup(MixupOptions opts) : opts_(std::move(opts)), cutmix_alpha_(opts_.cutmix_alpha) {
  HG_CHECK(opts_.mixup_alpha >= 0 && opts_.cutmix_alpha >= 0,
           "Mixup: alphas must be >= 0, got mixup ", opts_.mixup_alpha, ", cutmix ",
           opts_.cutmix_alpha);
  HG_CHECK(opts_.prob >= 0 && opts_.prob <= 1, "Mixup: mixup_prob must be in [0, 1], got ",
           opts_.prob);
  HG_CHECK(opts_.switch_prob >= 0 && opts_.switch_prob <= 1,
           "Mixup: mixup_switch_prob must be in [0, 1], got ", opts_.switch_prob);
  HG_CHECK(opts_.mode == "batch" || opts_.mode == "pair" || opts_.mode == "elem",
           "Mixup: mixup_mode must be batch, pair or elem, got '", opts_.mode, "'");
  HG_CHECK(opts_.label_smoothing >= 0 && opts_.label_smoothing <= 1,
           "Mixup: smoothing must be in [0, 1], got ", opts_.label_smoothing);
  HG_CHECK(opts_.num_classes >= 1, "Mixup: num_classes must be >= 1, got ", opts_.num_classes);
  if (opts_.cutmix_minmax) {
    const auto [lo, hi] = *opts_.cutmix_minmax;
    HG_CHECK(lo > 0 && lo < hi && hi <= 1,
             "Mixup: cutmix_minmax must satisfy 0 < min < max <= 1, got [", lo, ", ", hi, "]");
    cutmix_alpha_ = 1.0;  // timm: minmax forces cutmix on
  }
}

MixDraw Mixup::draw(int64_t H, int64_t W, Generator& gen) const {
  MixDraw d;
  if (gen.uniform() >= opts_.prob) return d;  // not mixed: lam 1
  const bool both = opts_.mixup_alpha > 0 && cutmix_alpha_ > 0;
  d.cutmix = both ? gen.uniform() < opts_.switch_prob : cutmix_alpha_ > 0;
  d.lam = sample_beta(d.cutmix ? cutmix_alpha_ : opts_.mixup_alpha, gen);
  if (!d.cutmix) return d;
  if (opts_.cutmix_minmax) {
    const auto [lo, hi] = *opts_.cutmix_minmax;
    auto side = [&](int64_t n) {
      const auto a = static_cast<int64_t>(static_cast<double>(n) * lo);
      const auto b = static_cast<int64_t>(static_cast<double>(n) * hi);
      return b > a ? a + gen.randint(b - a) : a;
    };
    const int64_t ch = side(H), cw = side(W);
    d.y0 = ch < H ? gen.randint(H - ch) : 0;
    d.x0 = cw < W ? gen.randint(W - cw) : 0;
    d.y1 = d.y0 + ch;
    d.x1 = d.x0 + cw;
  } else {
    const double r = std::sqrt(1.0 - d.lam);
    const auto ch = static_cast<int64_t>(static_cast<double>(H) * r),
               cw = static_cast<int64_t>(static_cast<double>(W) * r);
    const int64_t cy = gen.randint(H), cx = gen.randint(W);
    d.y0 = std::clamp<int64_t>(cy - ch / 2, 0, H);
    d.y1 = std::clamp<int64_t>(cy + ch / 2, 0, H);
    d.x0 = std::clamp<int64_t>(cx - cw / 2, 0, W);
    d.x1 = std::clamp<int64_t>(cx + cw / 2, 0, W);
  }
  // lam is what is left of the image itself after the (clipped) box
  d.lam = 1.0 - static_cast<double>((d.y1 - d.y0) * (d.x1 - d.x0)) / static_cast<double>(H * W);
  return d;
}

std::vector<MixDraw> Mixup::apply(float* images, int64_t N, int64_t H, int64_t W, int64_t C,
                                  const int64_t* labels, float* targets, Generator& gen,
                                  bool enabled) const {
  HG_CHECK(N % 2 == 0, "Mixup: the batch size must be even, got ", N);
  const int64_t K = opts_.num_classes;
  for (int64_t i = 0; i < N; ++i)
    HG_CHECK(labels[i] >= 0 && labels[i] < K, "Mixup: label ", labels[i], " of sample ", i,
             " out of range [0, ", K, ")");
  std::vector<MixDraw> draws(static_cast<size_t>(N));
  if (enabled && active()) {
    if (opts_.mode == "batch") {
      const MixDraw d = draw(H, W, gen);
      std::fill(draws.begin(), draws.end(), d);
    } else if (opts_.mode == "pair") {
      for (int64_t i = 0; i < N / 2; ++i)
        draws[size_t(i)] = draws[size_t(N - 1 - i)] = draw(H, W, gen);
    } else {
      for (auto& d : draws) d = draw(H, W, gen);
    }
    const int64_t per = H * W * C;
    const std::vector<float> orig(images, images + N * per);  // mixing reads the unmixed batch
    for (int64_t i = 0; i < N; ++i) {
      const MixDraw& d = draws[size_t(i)];
      if (d.lam == 1.0) continue;
      float* x = images + i * per;
      const float* other = orig.data() + (N - 1 - i) * per;
      if (d.cutmix) {
        for (int64_t y = d.y0; y < d.y1; ++y)
          std::copy(other + (y * W + d.x0) * C, other + (y * W + d.x1) * C, x + (y * W + d.x0) * C);
      } else {
        const auto lam = static_cast<float>(d.lam);
        for (int64_t k = 0; k < per; ++k) x[k] = x[k] * lam + other[k] * (1.0f - lam);
      }
    }
  }
  const double off = opts_.label_smoothing / static_cast<double>(K),
               on = 1.0 - opts_.label_smoothing + off;
  for (int64_t i = 0; i < N; ++i) {
    const double lam = draws[size_t(i)].lam;
    float* t = targets + i * K;
    for (int64_t k = 0; k < K; ++k)
      t[k] = static_cast<float>(off + (k == labels[i] ? lam * (on - off) : 0.0) +
                                (k == labels[N - 1 - i] ? (1.0 - lam) * (on - off) : 0.0));
  }
  return draws;
}

}  // namespace hg::data
