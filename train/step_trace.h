// The allocation trace (core/alloc_trace.h) of a few real training steps: the step of
// `haargrad bench` (zero_grad, forward in training mode, cross-entropy, backward, AdamW with timm's
// weight-decay groups) on a synthetic batch, recorded from before the model is built. Used by
// `haargrad alloc-trace` and by the tests of the allocator's bound
// (tests/train/step_memory_test.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/alloc_trace.h"

namespace hg::train {

struct StepTraceOptions {
  std::string model = "convnext_atto";  ///< a models/config.h name
  int batch = 2;
  int img_size = 224;              ///< input height = width in pixels
  std::string precision = "fp32";  ///< "fp32" or "bf16" (activations in bf16, parameters in f32)
  int steps = 3;                   ///< training steps recorded
  Device device = Device::cpu;
};

struct RecordedSteps {
  AllocTrace trace;
  /// The allocator's own figures during the recording, one per step as replay_trace reports them
  /// (step k ends with the k-th backward; one more for the last optimizer update). Peaks are this
  /// run's: the device's memory is emptied (empty_cache) before the recording and after it.
  std::vector<ReplayStep> allocator;
};

/// Records `steps` training steps. Throws hg::Error for an unknown model or precision, an image
/// size the model cannot take, or an unavailable device.
RecordedSteps record_training_steps(const StepTraceOptions& opts);

}  // namespace hg::train
