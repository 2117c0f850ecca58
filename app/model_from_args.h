// The model a command works on, from a checkpoint and the command line: a CONFIG.yaml when given,
// else the training config `haargrad train` stored in the checkpoint, else the config defaults
// (model convnext_tiny, 1000 classes, 3 channels), and then --key value overrides, e.g.
// `--model convnext_small --num-classes 10` for a timm state_dict that carries no config.
#pragma once

#include <string>
#include <vector>

#include "train/config.h"

namespace hg::app {

/// Which config was used, for messages.
struct ResolvedConfig {
  train::Config config;
  std::string source;  ///< "configs/x.yaml", "the config stored in ck.safetensors" or "defaults"
};

/// CONFIG (may be ""), else the checkpoint's stored config, else defaults; then the overrides.
/// Throws hg::Error for an unreadable file or a bad key / value (naming it).
ResolvedConfig config_for_checkpoint(const std::string& config, const std::string& checkpoint,
                                     const std::vector<std::string>& overrides);

}  // namespace hg::app
