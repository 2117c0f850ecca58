// Config keys in --help (see config_help.h).
#include "app/config_help.h"

#include <algorithm>

#include "core/error.h"
#include "train/config.h"

namespace hg::app {

std::string config_keys_help() {
  const std::vector<train::KeyDoc> docs = train::config_key_docs();
  size_t width = 0;
  for (const auto& d : docs) width = std::max(width, d.key.size());
  std::string out =
      "Config keys (the YAML file's keys; any of them can be overridden on the command line as "
      "--key value,\n"
      "dashes or underscores: --weight-decay 0.05; lists as 1,2,3 or [1, 2, 3]; a bool key alone "
      "means true;\n"
      "a string as typed (\"run #2\" keeps its \" #2\"), null as in YAML; timm's -b, -vb and -j "
      "are "
      "batch_size,\n"
      "validation_batch_size and workers):\n";
  for (const auto& d : docs) {
    out += str("  ", d.key, std::string(width - d.key.size() + 2, ' '), d.type, " (default ", d.default_value, ")\n");
    out += str("  ", std::string(width + 2, ' '), d.help, "\n");
  }
  return out;
}

std::string config_keys_pointer() {
  return "Other --key value pairs override config keys; `haargrad train --help` lists every key with its type "
         "and default.";
}

namespace {

/// Whether `arg` is an option "--key" (no "=value") that names no config key: timm's flags that
/// haargrad lacks (--amp), or a typo.
bool unknown_option(const std::string& arg) {
  if (arg.size() <= 2 || arg.rfind("--", 0) != 0 || arg.find('=') != std::string::npos)
    return false;
  std::string key = arg.substr(2);
  std::replace(key.begin(), key.end(), '-', '_');
  const std::vector<std::string> keys = train::config_keys();
  return std::find(keys.begin(), keys.end(), key) == keys.end();
}

}  // namespace

ConfigArgs split_config_args(const std::vector<std::string>& remaining) {
  ConfigArgs out;
  // CONFIG: the first argument when it is no option ("--key", or timm's short "-b"); after
  // options (argparse, and so timm's train.py, takes them in any order: `train --epochs 1
  // x.yaml`), the first argument named *.yaml / *.yml that is no option's value (`--experiment
  // e.yaml x.yaml` names the experiment e.yaml; its config is x.yaml)
  size_t at = remaining.size();
  if (!remaining.empty() && !remaining[0].empty() && remaining[0][0] != '-') {
    at = 0;
  } else {
    // an unknown option takes no value here (timm's flags: `--amp x.yaml` keeps its CONFIG), but
    // a *.yaml right after it is its value when another *.yaml can be the CONFIG: `--unknown
    // e.yaml x.yaml` took e.yaml for the CONFIG ("cannot open file 'e.yaml'"), naming no option
    size_t after_unknown = remaining.size();
    for (size_t i = 0; i < remaining.size() && at == remaining.size(); ++i) {
      const std::string& arg = remaining[i];
      if (arg.empty() || arg[0] != '-') {
        if (!train::yaml_name(arg)) continue;
        if (i == 0 || !unknown_option(remaining[i - 1]))
          at = i;
        else if (after_unknown == remaining.size())
          after_unknown = i;
      } else if (train::override_takes_value(arg) && i + 1 < remaining.size() &&
                 remaining[i + 1].rfind("--", 0) != 0) {
        ++i;  // its value (a word naming an option is none: apply_overrides says so)
      }
    }
    if (at == remaining.size()) {
      at = after_unknown;
      out.after_unknown_option = at != remaining.size();
    }
  }
  for (size_t i = 0; i < remaining.size(); ++i) {
    if (i == at)
      out.config = remaining[i];
    else
      out.overrides.push_back(remaining[i]);
  }
  return out;
}

}  // namespace hg::app
