// Golden-file checkers shared by the CPU golden test (tests/models) and the GPU one (tests/gpu).
// Each checker recognises its kind from keys and metadata, never from the file name.
#pragma once

#include <string>
#include <vector>

#include "core/safetensors.h"

namespace hg::test {

/// One compared quantity: its key, the relative error (max |a-b| / max |ref|) and the bound.
struct GoldenCheck {
  std::string key;
  double rel_error;
  double tolerance;
  bool ok() const { return rel_error <= tolerance; }
};

/// True when the file holds WTConv2d layer cases (keys case{i}.x / case{i}.y, metadata "cases").
bool is_wtconv_cases(const safetensors::File& f);
/// Runs every case in `dtype` on `device`: y and every gradient vs the file (fused and reference
/// modes). tolerance: 1e-10 for f64, 1e-5 for f32 (layer), 2e-2 for bf16 (x and grad_y bf16,
/// parameters f32: mixed precision).
std::vector<GoldenCheck> check_wtconv_cases(const safetensors::File& f, DType dtype, Device device);

/// True when the file holds a ConvNeXt / WTConvNeXt model (metadata "config", keys input/logits).
bool is_model_file(const safetensors::File& f);
/// logits, loss, act.*, every grad.*, adamw3.* after three AdamW steps. tolerance: 1e-10 (f64),
/// 1e-4 (f32, whole model).
std::vector<GoldenCheck> check_model_file(const safetensors::File& f, DType dtype, Device device);

}  // namespace hg::test
