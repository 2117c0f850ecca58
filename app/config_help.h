// The config-key part of `haargrad train --help` (and the pointer to it in the other commands'
// help), made from the key table of train/config.cpp, the keys' only description.
#pragma once

#include <string>
#include <vector>

namespace hg::app {

/// Every config key: "  key   type (default value)" and its line of help below, in table order.
std::string config_keys_help();

/// One line for commands that take --key value overrides too (validate, bench CONFIG).
std::string config_keys_pointer();

/// An optional CONFIG.yaml and the --key value overrides after it, from the arguments CLI11 left
/// over (commands whose CONFIG is optional take it this way: a CLI11 positional would also swallow
/// the value of an override such as `--device cpu` when no CONFIG is given). CONFIG is the first
/// left-over argument when that does not start with "-" (an option: "--key", timm's "-b"), else
/// the first one named *.yaml or *.yml (options before the config, as timm's argparse takes them)
/// that is no override's value (train::override_takes_value: `--experiment e.yaml` names no
/// config) nor, when another follows, right after an unknown option (`--unknown e.yaml x.yaml`:
/// x.yaml, and apply_overrides names the option).
struct ConfigArgs {
  std::string config;                  ///< "" when none was given
  std::vector<std::string> overrides;  ///< for train::apply_overrides
  /// config is the word right after an unknown option, the only *.yaml left: that option's value
  /// when a config is given elsewhere (-c)
  bool after_unknown_option = false;
};
ConfigArgs split_config_args(const std::vector<std::string>& remaining);

}  // namespace hg::app
