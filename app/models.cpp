// `haargrad models`: every model name the program can build, with its parameter counts (counted from
// the config, nothing is built), its default input size and forward GMACs there.
#include <cstdio>

#include "app/command.h"
#include "core/error.h"
#include "models/config.h"

namespace hg::app {
namespace {

std::string with_commas(int64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void run_models() {
  std::printf("%-20s %14s %10s %8s %8s %8s  %s\n", "model", "params", "fixed", "img_size",
              "crop_pct", "GMACs", "stages (depths x dims)");
  for (const std::string& name : model_names()) {
    const ModelConfig c = model_config(name);
    const ParamCount n = param_count(c);
    std::string stages;
    for (size_t s = 0; s < c.depths.size(); ++s) stages += str(s ? " " : "", c.depths[s], "x", c.dims[s]);
    if (c.wtconv) stages += str(", WTConv k", c.kernel_size, " levels ", shape_str(c.wt_levels));
    std::printf("%-20s %14s %10s %8d %8.3g %8.3f  %s\n", name.c_str(),
                with_commas(n.trainable).c_str(), with_commas(n.fixed).c_str(), c.default_img_size,
                c.default_crop_pct, forward_macs(c, c.default_img_size) / 1e9, stages.c_str());
  }
  std::printf(
      "\nparams: trainable parameters (timm's count for ConvNeXt); fixed: WTConv Haar filter "
      "buffers.\n"
      "img_size, crop_pct: the model's own, which a config that leaves them unset takes (as "
      "timm's\n"
      "pretrained config gives them).\n"
      "Any field can be changed in a config (depths, dims, kernel_size, wt_levels, patch_size, "
      "...).\n");
}

}  // namespace

HG_REGISTER_COMMAND([](CLI::App& root) {
  CLI::App* cmd = root.add_subcommand(
      "models",
      "List the model names with parameter counts, their own input size and crop_pct, and GMACs");
  cmd->callback([] { run_models(); });
});

}  // namespace hg::app
