// CPU reference of kernels/cross_entropy.h: log-sum-exp with the row max subtracted, sums in
// double.
#include "kernels/cross_entropy.h"

#include <algorithm>
#include <cmath>

namespace hg::kernels::cpu {

namespace {
// softmax_j = exp((z_j - max) - log sum) from a row's stats (max, log sum): exp(z_j - lse) lost
// the log sum beside a max far from 0, and the gradient's row summed to more than 1
template <typename T>
double softmax_at(T z, const T* row_stats) {
  return std::exp((static_cast<double>(z) - static_cast<double>(row_stats[0])) -
                  static_cast<double>(row_stats[1]));
}
}  // namespace

template <typename T>
void cross_entropy_forward(const T* logits, const int64_t* labels, T* stats, T* loss, int64_t N,
                           int64_t K, double smoothing) {
  double total = 0;
  for (int64_t i = 0; i < N; ++i) {
    const T* z = logits + i * K;
    double mx = z[0];
    for (int64_t j = 1; j < K; ++j) mx = std::max(mx, static_cast<double>(z[j]));
    double se = 0, sd = 0;  // sd: sum of z - mx
    for (int64_t j = 0; j < K; ++j) {
      const double d = static_cast<double>(z[j]) - mx;
      se += std::exp(d);
      sd += d;
    }
    const double log_se = std::log(se);
    stats[2 * i] = static_cast<T>(mx);  // a logit: exact in T
    stats[2 * i + 1] = static_cast<T>(log_se);
    // (1-s) * (lse - z_y) + (s/K) * sum_j (lse - z_j), each lse - z_j as (mx - z_j) + log_se:
    // with logits far from 0 (|z| ~ 1e17 in double) mx + log_se loses log_se, and lse - z_y came
    // out 0 where torch's log_softmax gives log K. The smoothing term only when smoothing is on:
    // a -inf logit makes sd -inf, and 0 x inf is NaN where torch's loss is finite.
    total += (1.0 - smoothing) * ((mx - static_cast<double>(z[labels[i]])) + log_se);
    if (smoothing != 0) total += smoothing * (log_se - sd / static_cast<double>(K));
  }
  loss[0] = static_cast<T>(total / static_cast<double>(N));
}

template <typename T>
void cross_entropy_backward(const T* logits, const int64_t* labels, const T* stats,
                            const T* grad_loss, T* dlogits, int64_t N, int64_t K,
                            double smoothing) {
  const double g = static_cast<double>(grad_loss[0]) / static_cast<double>(N);
  const double off = smoothing / static_cast<double>(K);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < K; ++j) {
      const double p = softmax_at(logits[i * K + j], stats + 2 * i);
      const double target = (j == labels[i] ? 1.0 - smoothing : 0.0) + off;
      dlogits[i * K + j] = static_cast<T>(g * (p - target));
    }
}

template <typename T>
void soft_cross_entropy_forward(const T* logits, const T* targets, T* stats, T* loss, int64_t N,
                                int64_t K) {
  double total = 0;
  for (int64_t i = 0; i < N; ++i) {
    const T* z = logits + i * K;
    const T* t = targets + i * K;
    double mx = z[0];
    for (int64_t j = 1; j < K; ++j) mx = std::max(mx, static_cast<double>(z[j]));
    double se = 0;
    for (int64_t j = 0; j < K; ++j) se += std::exp(z[j] - mx);
    const double log_se = std::log(se);
    stats[2 * i] = static_cast<T>(mx);
    stats[2 * i + 1] = static_cast<T>(log_se);
    for (int64_t j = 0; j < K; ++j)  // lse - z_j as (mx - z_j) + log_se, as above; t_j = 0 adds
      if (t[j] != 0)                 // nothing (0 x inf at a -inf logit would be NaN)
        total += static_cast<double>(t[j]) * ((mx - static_cast<double>(z[j])) + log_se);
  }
  loss[0] = static_cast<T>(total / static_cast<double>(N));
}

template <typename T>
void soft_cross_entropy_backward(const T* logits, const T* targets, const T* stats,
                                 const T* grad_loss, T* dlogits, int64_t N, int64_t K) {
  const double g = static_cast<double>(grad_loss[0]) / static_cast<double>(N);
  for (int64_t i = 0; i < N; ++i) {
    const T* t = targets + i * K;
    double mass = 0;  // sum_j t_ij (1 for mixed one-hot targets)
    for (int64_t j = 0; j < K; ++j) mass += t[j];
    for (int64_t j = 0; j < K; ++j) {
      const double p = softmax_at(logits[i * K + j], stats + 2 * i);
      dlogits[i * K + j] = static_cast<T>(g * (p * mass - static_cast<double>(t[j])));
    }
  }
}

#define HG_INSTANTIATE(T)                                                                    \
  template void cross_entropy_forward<T>(const T*, const int64_t*, T*, T*, int64_t, int64_t, \
                                         double);                                            \
  template void cross_entropy_backward<T>(const T*, const int64_t*, const T*, const T*, T*,  \
                                          int64_t, int64_t, double);                         \
  template void soft_cross_entropy_forward<T>(const T*, const T*, T*, T*, int64_t, int64_t); \
  template void soft_cross_entropy_backward<T>(const T*, const T*, const T*, const T*, T*,   \
                                               int64_t, int64_t);
HG_INSTANTIATE(float)
HG_INSTANTIATE(double)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cpu
