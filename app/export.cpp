// `haargrad export CHECKPOINT --out weights.safetensors`: the model's weights alone (no optimizer
// state, no run position), under timm's names and shapes, so that
// `timm.create_model(name).load_state_dict(safetensors.torch.load_file(path), strict=True)` takes
// them (WTConvNeXt: the reference implementation's names, Haar filter buffers included). --ema
// writes the model EMA's weights ("state_dict_ema.*" in the checkpoint) under the same plain names.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "app/command.h"
#include "app/config_help.h"
#include "app/model_from_args.h"
#include "core/autograd.h"
#include "core/safetensors.h"
#include "models/checkpoint.h"
#include "models/convnext.h"
#include "train/checkpoint.h"
#include "train/run_folder.h"
#include "train/trainer.h"

namespace hg::app {
namespace {

struct ExportArgs {
  std::string checkpoint, out, config;
  std::vector<std::string> overrides;
  bool ema = false;
};

/// What a checkpoint holds besides the exported tensors (their names in the file: `prefix` +
/// name), by kind, for the log line ("optimizer state, model EMA"): only the kinds that are there.
template <class Exported>
std::string left_out_kinds(const safetensors::File& in, const Exported& exported,
                           const std::string& prefix) {
  std::set<std::string> names;
  for (const auto& [name, t] : exported) names.insert(prefix + name);
  std::set<std::string> kinds;
  for (const auto& [name, t] : in.tensors) {
    if (names.count(name)) continue;
    if (name.rfind(train::kEmaPrefix, 0) == 0)
      kinds.insert("model EMA");
    else if (name.rfind("optimizer.", 0) == 0)
      kinds.insert("optimizer state");
    else
      kinds.insert("the model");  // the model weights, when the EMA's were exported
  }
  std::string out;
  for (const std::string& k : kinds) out += (out.empty() ? "" : ", ") + k;
  return out.empty() ? "nothing" : out;
}

void run_export(const ExportArgs& a) {
  refuse_mpirun("export");
  check_replaces_safetensors_only(a.out, "export: --out");
  // nor a run's files (its checkpoints above all: a resume from bare weights would start it over)
  train::check_output_file(a.out, "export: --out", "the weights",
                           {{"the checkpoint", a.checkpoint}});
  // of safetensors files, weights (or logits) only: an input batch given as --out stays
  check_replaces_its_kind_only(
      a.out, "export: --out",
      [](const std::string& name) {
        return name == "logits" || name.rfind("stem.", 0) == 0 || name.rfind("stages.", 0) == 0 ||
               name.rfind("head.", 0) == 0;
      },
      "weights");
  refuse_keys_that_change_nothing("export", a.overrides, "writes the model's weights alone",
                                  {"threads"});
  // the weights do not depend on img_size: a 28 px run's config with --model convnext_atto (stride
  // 32) exports atto's weights
  const ResolvedConfig rc =
      config_for_checkpoint(a.config, a.checkpoint, a.overrides, train::ImgSizeCheck::unused);
  // Loading into the model checks every name and shape (and the Haar filters) before anything is
  // written; the file then holds exactly the model's state_dict.
  autograd::NoGradGuard no_grad;
  ConvNeXt model(train::model_config_from(rc.config), 0, DType::f32, Device::cpu);
  if (!a.ema)
    load_weights_of(rc, a.checkpoint, model);
  else
    HG_CHECK(train::load_ema_weights(a.checkpoint, model), "export --ema: checkpoint ",
             a.checkpoint, " holds no model EMA weights (", train::kEmaPrefix,
             "*): its run kept no model_ema, or it is an export already; export without --ema");
  const auto tensors = timm_state_dict(model);
  check_finite_weights(model, str("export: ", a.checkpoint, a.ema ? " (its model EMA)" : ""),
                       "export an earlier checkpoint");
  const safetensors::File in = safetensors::load(a.checkpoint);
  safetensors::save(a.out, tensors,
                    {{"format", "pt"},
                     {"model", rc.config.model},
                     {"model_config", model.config.to_json()},
                     // infer and validate build the model from it, as from a training checkpoint
                     {"config", train::to_yaml(rc.config)}});
  int64_t elements = 0;
  for (const auto& [name, t] : tensors) elements += t.numel();
  const size_t left_out = in.tensors.size() - std::min(in.tensors.size(), tensors.size());
  spdlog::info("export: wrote {} tensors ({} values) of {}{} to {}{}", tensors.size(), elements,
               rc.config.model, a.ema ? "'s model EMA" : "", a.out,
               left_out == 0
                   ? std::string()
                   : str(" (left out ", left_out, " other tensors of ", a.checkpoint, ": ",
                         left_out_kinds(in, tensors, a.ema ? train::kEmaPrefix : ""), ")"));
}

}  // namespace

HG_REGISTER_COMMAND([](CLI::App& root) {
  auto a = std::make_shared<ExportArgs>();
  CLI::App* cmd = root.add_subcommand("export",
                                      "haargrad export CHECKPOINT --out weights.safetensors "
                                      "[--ema] [-c|--config CONFIG.yaml] [--key value ...]\n"
                                      "Write a checkpoint's model weights alone (timm names and "
                                      "shapes, float32; no optimizer state),\n"
                                      "loadable by timm's load_state_dict(strict=True). The model "
                                      "comes from the config stored in the\n"
                                      "checkpoint, or --config, with any --key value overrides.");
  cmd->add_option("checkpoint", a->checkpoint, "checkpoint written by haargrad train (last, model_best, ...)")
      ->required();
  cmd->add_option("--out", a->out, "the weights file to write (.safetensors)")->required();
  cmd->add_flag("--ema", a->ema,
                "write the model EMA's weights (state_dict_ema.*) instead of the model's");
  cmd->add_option("-c,--config", a->config,
                  "YAML config of the model (default: the one stored in the checkpoint)");
  cmd->allow_extras();
  cmd->footer(config_keys_pointer());
  cmd->callback([a, cmd] {
    a->overrides = cmd->remaining();
    // a run folder means its model_best.safetensors, as for validate
    a->checkpoint = checkpoint_file(a->checkpoint, "export: checkpoint", "exporting");
    run_export(*a);
  });
});

}  // namespace hg::app
