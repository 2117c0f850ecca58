// Config resolution for commands that start from a checkpoint (see model_from_args.h).
#include "app/model_from_args.h"

#include "core/error.h"
#include "train/checkpoint.h"

namespace hg::app {

ResolvedConfig config_for_checkpoint(const std::string& config, const std::string& checkpoint,
                                     const std::vector<std::string>& overrides) {
  ResolvedConfig r;
  if (!config.empty()) {
    r.config = train::load_config(config);
    r.source = config;
  } else if (const std::string stored = train::checkpoint_config_yaml(checkpoint); !stored.empty()) {
    r.source = str("the config stored in ", checkpoint);
    r.config = train::config_from_yaml(stored, r.source);
    r.config.resume = "";  // a training setting, never wanted here
  } else {
    r.source = "the config defaults (the checkpoint stores no config)";
  }
  train::apply_overrides(r.config, overrides);
  return r;
}

}  // namespace hg::app
