// Config resolution for commands that start from a checkpoint (see model_from_args.h).
#include "app/model_from_args.h"

#include <algorithm>

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
    // a bare state_dict (timm's): which model it is must be said, not guessed
    const bool model_given = std::any_of(
        overrides.begin(), overrides.end(),
        [](const std::string& o) { return o == "--model" || o.rfind("--model=", 0) == 0; });
    HG_CHECK(
        model_given, checkpoint, " stores no config (a timm state_dict?): give --config ",
        "CONFIG.yaml, or --model NAME (and --num-classes N when not 1000, --in-chans 1 for gray)");
    r.source = "the config defaults and --model (the checkpoint stores no config)";
  }
  train::apply_overrides(r.config, overrides);
  return r;
}

}  // namespace hg::app
