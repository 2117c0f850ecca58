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
  if (x + y > 0) return x / (x + y);
  // Both underflow (only for alpha below ~0.1): their logs then differ by about 1 / alpha, so the
  // ratio is 0 or 1 to double precision, each as likely (Beta(a, a) piles up at both ends), never
  // the even split that mixes the most.
  return gen.uniform() < 0.5 ? 0.0 : 1.0;
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

namespace {

bool same_draw(const MixDraw& a, const MixDraw& b) {
  return a.lam == b.lam && a.cutmix == b.cutmix && a.y0 == b.y0 && a.y1 == b.y1 && a.x0 == b.x0 &&
         a.x1 == b.x1;
}

// x = its draw's mix of x and `other` (the partner's unmixed image), per floats.
void mix_into(float* x, const float* other, const MixDraw& d, int64_t W, int64_t C, int64_t per) {
  if (d.lam == 1.0) return;
  if (d.cutmix) {
    for (int64_t y = d.y0; y < d.y1; ++y)
      std::copy(other + (y * W + d.x0) * C, other + (y * W + d.x1) * C, x + (y * W + d.x0) * C);
  } else {
    const auto lam = static_cast<float>(d.lam);
    for (int64_t k = 0; k < per; ++k) x[k] = x[k] * lam + other[k] * (1.0f - lam);
  }
}

}  // namespace

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
    // Sample i mixes with sample N - 1 - i, so each pair is mixed in place: no copy of the batch.
    // A pair with one draw (modes batch and pair) swaps its cutmix box or blends both images in one
    // pass; a pair with two draws (elem) keeps a copy of the first image for the second.
    const int64_t per = H * W * C;
    std::vector<float> keep;
    for (int64_t i = 0; i < N / 2; ++i) {
      const int64_t j = N - 1 - i;
      float* a = images + i * per;
      float* b = images + j * per;
      const MixDraw &da = draws[size_t(i)], &db = draws[size_t(j)];
      if (same_draw(da, db)) {
        if (da.lam == 1.0) continue;
        if (da.cutmix) {
          for (int64_t y = da.y0; y < da.y1; ++y)
            std::swap_ranges(a + (y * W + da.x0) * C, a + (y * W + da.x1) * C,
                             b + (y * W + da.x0) * C);
        } else {
          const auto lam = static_cast<float>(da.lam);
          for (int64_t k = 0; k < per; ++k) {
            const float u = a[k], v = b[k];
            a[k] = u * lam + v * (1.0f - lam);
            b[k] = v * lam + u * (1.0f - lam);
          }
        }
      } else {
        keep.assign(a, a + per);
        mix_into(a, b, da, W, C, per);
        mix_into(b, keep.data(), db, W, C, per);
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
