// Evaluation over a whole validation split: mean loss, top-1 / top-5, and how many images gave
// non-finite outputs (a diverged model must never look good: those rows count as wrong, and an
// evaluation with any of them is not finite).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>

#include "core/tensor.h"
#include "data/loader.h"
#include "models/convnext.h"

namespace hg::train {

struct EvalResult {
  double loss = 0;            ///< mean cross-entropy (no smoothing); NaN/Inf when outputs were
  double top1 = 0, top5 = 0;  ///< % of images; rows with non-finite logits count as wrong
  int64_t images = 0;
  int64_t nonfinite = 0;  ///< images whose logits had a NaN or Inf
  bool stopped = false;   ///< `stop` said so before the split's end: the figures are partial
  /// True when every output and the loss were finite: only such an evaluation can be "best".
  bool finite() const { return nonfinite == 0 && std::isfinite(loss); }
};

/// Runs the model (eval mode, no gradients) over every batch of `loader` (epoch `epoch` of its
/// order); top-5 is top-min(5, classes). `stop`, when given, is asked after every batch: true ends
/// the evaluation there (a run told to stop by a signal; EvalResult::stopped).
EvalResult evaluate(ConvNeXt& model, data::DataLoader& loader, Device device, int64_t epoch,
                    const std::function<bool()>& stop = {});

}  // namespace hg::train
