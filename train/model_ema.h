// Model EMA (timm's ModelEmaV3; config keys model_ema, model_ema_decay, model_ema_warmup): an fp32
// copy of the model whose every tensor (parameters and fixed buffers, as timm's state_dict) follows
//   ema = lerp(ema, model, 1 - decay(step))   after each optimizer update (step = updates so far),
//   decay(step) = 0 at step <= 1 (the first update copies the model), else
//                 warmup ? clamp(1 - (1 + (step - 1))^(-2/3), 0, decay) : decay.
// (timm: step' = step - update_after_step - 1 with update_after_step 0, gamma 1, power 2/3, min 0.)
// The update is one CUDA launch for all tensors on the GPU and a loop on the CPU (kernels/ema.h).
// Checkpoints store the EMA under the prefix "state_dict_ema." (timm's checkpoint key).
#pragma once

#include <cstdint>
#include <memory>

#include "models/convnext.h"

namespace hg::train {

class ModelEma {
 public:
  /// A copy of `model` (f32, same device and config). Throws hg::Error for a decay outside [0, 1]
  /// or a model that is not f32.
  ModelEma(const ConvNeXt& model, double decay, bool warmup);
  ModelEma(const ModelEma&) = delete;
  ModelEma& operator=(const ModelEma&) = delete;

  /// The decay used by update(step) (see the file comment).
  double decay_at(int64_t step) const;
  /// ema = lerp(ema, model, 1 - decay_at(step)). `model` must be the one the EMA was made from
  /// (same tensors at the same addresses); throws hg::Error otherwise.
  void update(const ConvNeXt& model, int64_t step);
  /// Copies every tensor of `model` into the EMA.
  void set(const ConvNeXt& model);

  ConvNeXt& module() { return *ema_; }
  const ConvNeXt& module() const { return *ema_; }
  double decay() const { return decay_; }
  bool warmup() const { return warmup_; }

 private:
  std::unique_ptr<ConvNeXt> ema_;
  double decay_;
  bool warmup_;
  std::vector<const void*> model_ptrs_;  // the model's tensors when the EMA was made
  Tensor chunk_table_;                   // CUDA: the kernels::EmaChunk table on the device
  int64_t num_chunks_ = 0;
};

}  // namespace hg::train
