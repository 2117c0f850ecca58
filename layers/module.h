// Module: a layer that owns parameters. A module lists its tensors under timm / PyTorch state_dict
// names (e.g. "stages.2.blocks.4.conv_dw.weight"), which is all checkpoints, optimizers and
// `haargrad info` need. Forward functions are ordinary member functions (different layers take
// different arguments); they call the autograd-recording functional ops of layers/*.h.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"

namespace hg {

/// One named tensor of a module.
struct ParamRef {
  std::string name;
  Tensor tensor;              ///< shares storage with the module's member
  bool trainable = true;      ///< false for fixed buffers (WTConv's wt_filter / iwt_filter)
  bool no_weight_decay = false;  ///< biases, norms, layer scale gamma, WTConv scales (timm rule)
};

class Module {
 public:
  virtual ~Module() = default;
  /// Appends this module's tensors, names prefixed with `prefix` (which ends in '.' or is empty).
  virtual void collect(const std::string& prefix, std::vector<ParamRef>& out) const = 0;

  /// All tensors of the module in state_dict order.
  std::vector<ParamRef> named_tensors() const {
    std::vector<ParamRef> out;
    collect("", out);
    return out;
  }
};

/// Makes a parameter: allocated in Category::parameters, requires grad.
Tensor make_parameter(const Shape& shape, DType dtype, Device device);

}  // namespace hg
