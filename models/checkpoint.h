// Model weights <-> named tensors (timm / PyTorch state_dict names), for safetensors checkpoints.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "layers/module.h"
#include "models/convnext.h"

namespace hg {

/// (name, tensor) for every tensor of the module, fixed buffers included, in state_dict order.
std::vector<std::pair<std::string, Tensor>> state_dict(const Module& m);

/// How many of a module's tensor elements are NaN or Inf, and how many there are in all (a
/// diverged run's weights; validate and export name both counts).
struct WeightCount {
  int64_t nonfinite = 0, total = 0;
  std::string first;  ///< the tensor of the first non-finite one (state_dict order); "" if none
};
WeightCount nonfinite_weights(const Module& m);

/// Throws hg::Error when weights just loaded into `m` are NaN or Inf (a diverged run's), naming
/// where they come from (`what`: "initial_checkpoint FILE"), both counts and the first tensor, and
/// `instead` (what to give in its place). Checked at the load: the first step's loss or the
/// evaluation's outputs would be NaN later, naming neither the file nor a weight.
void check_finite_weights(const Module& m, const std::string& what, const std::string& instead);

/// A ConvNeXt's tensors as timm's state_dict holds them (names, order, shapes): state_dict(m),
/// with the MLP weights (`*.mlp.fc1.weight`, `*.mlp.fc2.weight`) as 1x1 conv weights (out, in, 1,
/// 1) when m.config.conv_mlp (timm's atto .. nano). What checkpoints and exports write.
std::vector<std::pair<std::string, Tensor>> timm_state_dict(const ConvNeXt& m);

/// timm's clean_state_dict: a tensor named "module.<name>" (a model saved from inside torch's
/// DataParallel / DistributedDataParallel) is named "<name>".
std::map<std::string, Tensor> clean_state_dict(std::map<std::string, Tensor> tensors);

/// Copies tensors[prefix + name] into each of the module's tensors (converting dtype / device).
/// Strict (default): missing, unexpected (under `prefix`) and mis-shaped keys are all listed in ONE
/// hg::Error. Fixed buffers (trainable == false, e.g. WTConv's wt_filter / iwt_filter) are checked
/// to equal the module's own values within 1e-6 instead of being copied (error names the key).
/// A Linear weight stored as (out, in, 1, 1) (timm's conv_mlp variants) loads into (out, in).
void load_state_dict(const Module& m, const std::map<std::string, Tensor>& tensors, bool strict = true,
                     const std::string& prefix = "");

}  // namespace hg
