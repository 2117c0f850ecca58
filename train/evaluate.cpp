// evaluate (see evaluate.h).
#include "train/evaluate.h"

#include <algorithm>

#include "core/autograd.h"
#include "layers/loss.h"

namespace hg::train {

EvalResult evaluate(ConvNeXt& model, data::DataLoader& loader, Device device, int64_t epoch,
                    const std::function<bool()>& stop) {
  autograd::NoGradGuard no_grad;
  loader.start_epoch(epoch);
  data::Batch b;
  double loss_sum = 0;
  int64_t c1 = 0, c5 = 0;
  EvalResult r;
  const int64_t k5 = std::min<int64_t>(5, model.config.num_classes);
  while (loader.next(b)) {
    Tensor x = b.images.to(device), y = b.labels.to(device);
    Tensor logits = model.forward(x, false);
    const int64_t bs = b.labels.numel();
    loss_sum += cross_entropy(logits, y).item() * static_cast<double>(bs);
    c1 += correct_topk(logits, y, 1);
    c5 += correct_topk(logits, y, k5);
    r.nonfinite += nonfinite_rows(logits);
    r.images += bs;
    if (stop && stop()) {
      r.stopped = true;
      break;
    }
  }
  if (r.images > 0) {
    const double n = static_cast<double>(r.images);
    r.loss = loss_sum / n;
    r.top1 = 100.0 * static_cast<double>(c1) / n;
    r.top5 = 100.0 * static_cast<double>(c5) / n;
  }
  return r;
}

}  // namespace hg::train
