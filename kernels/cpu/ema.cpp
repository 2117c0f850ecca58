// CPU model-EMA update of kernels/ema.h.
#include "kernels/ema.h"

namespace hg::kernels::cpu {

void ema_update(float* ema, const float* model, int64_t n, float weight) {
  const float rest = 1.0f - weight;
  if (weight < 0.5f) {
    for (int64_t i = 0; i < n; ++i) {
      const float diff = model[i] - ema[i];
      const float step = weight * diff;
      ema[i] = ema[i] + step;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const float diff = model[i] - ema[i];
      const float back = diff * rest;
      ema[i] = model[i] - back;
    }
  }
}

}  // namespace hg::kernels::cpu
