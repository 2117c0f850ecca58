// timm train.py options that haargrad has no key for: the hint an unknown key's message gives, and
// whether a value asks for nothing haargrad would do otherwise (a timm args.yaml's defaults).
#pragma once

#include <string>

namespace YAML {
class Node;
}

namespace hg::train {

/// What timm's option `key` (train.py's name, '-' as '_') is here, or "" for a key timm has
/// not: "timm's --data is --data-dir here", "... is not supported: ...", "... leave it out".
std::string timm_key_hint(const std::string& key);

/// True when `value` of timm's option `key` asks for nothing that haargrad does otherwise, so a
/// config may carry it and haargrad ignores it: the option's off value (null, false, 0, '', [],
/// {}: `bce_loss: false`, `log_wandb: false`, `class_map: ''`), its timm default where it only
/// tunes a feature that is off (`kd_temperature: 4.0` without `kd_model_name`), or any value of
/// an option that changes no result here (`channels_last`: haargrad is NHWC anyway; `dist_bn`:
/// ConvNeXt has no BatchNorm). A timm run's args.yaml writes every option, ~90 of them haargrad's
/// unknown keys, so that it loads. False for a key timm has not and for any other value (which the
/// unknown key's message then names).
bool timm_key_asks_nothing(const std::string& key, const YAML::Node& value);

}  // namespace hg::train
