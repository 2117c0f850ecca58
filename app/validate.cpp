// `haargrad validate CONFIG --checkpoint FILE`: evaluates a checkpoint on the config's val split
// and prints timm validate.py's columns.
#include <cmath>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "app/command.h"
#include "core/autograd.h"
#include "data/from_config.h"
#include "layers/loss.h"
#include "models/convnext.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/trainer.h"

namespace hg::app {
namespace {

struct ValidateArgs {
  std::string config, checkpoint;
  std::vector<std::string> overrides;
};

void run_validate(const ValidateArgs& a) {
  train::Config cfg = train::load_config(a.config);
  train::apply_overrides(cfg, a.overrides);
  const Device device = train::resolve_device(cfg.device);
  ConvNeXt model(train::model_config_from(cfg), 0, DType::f32, device);
  train::load_checkpoint(a.checkpoint, model, nullptr);
  data::Datasets ds = data::make_datasets(cfg);
  auto loader = data::make_loader(cfg, false, ds.val);

  autograd::NoGradGuard no_grad;
  loader->start_epoch(0);
  data::Batch b;
  int64_t n = 0, c1 = 0, c5 = 0, nonfinite = 0;
  const int64_t k5 = std::min<int64_t>(5, cfg.num_classes);
  while (loader->next(b)) {
    Tensor logits = model.forward(b.images.to(device), false);
    Tensor y = b.labels.to(device);
    c1 += correct_topk(logits, y, 1);
    c5 += correct_topk(logits, y, k5);
    nonfinite += nonfinite_rows(logits);
    n += b.labels.numel();
  }
  HG_CHECK(n > 0, "validate: the validation split is empty");
  if (nonfinite > 0) {  // a diverged model: no accuracy to report (such rows count as wrong anyway)
    int64_t bad = 0, total = 0;
    for (const ParamRef& p : model.named_tensors()) {
      for (double v : p.tensor.to_vector<double>()) bad += !std::isfinite(v);
      total += p.tensor.numel();
    }
    throw Error(str("validate: the outputs of ", a.checkpoint, " are non-finite (NaN or Inf) for ", nonfinite, " of ",
                    n, " images; ", bad, " of ", total, " of its weights are non-finite: the run it comes from ",
                    "diverged; use an earlier checkpoint"));
  }
  const double top1 = 100.0 * double(c1) / double(n), top5 = 100.0 * double(c5) / double(n);
  std::printf("model,img_size,top1,top1_err,top5,top5_err,param_count\n");
  std::printf("%s,%lld,%.3f,%.3f,%.3f,%.3f,%.3f\n", cfg.model.c_str(), static_cast<long long>(cfg.img_size), top1,
              100.0 - top1, top5, 100.0 - top5, double(model.num_trainable()) / 1e6);
}

}  // namespace

HG_REGISTER_COMMAND([](CLI::App& root) {
  auto a = std::make_shared<ValidateArgs>();
  CLI::App* cmd = root.add_subcommand("validate", "Evaluate a checkpoint on the whole validation split (timm validate.py "
                                                   "columns); other --key value pairs override config keys");
  cmd->add_option("config", a->config, "YAML config of the model and data")->required();
  cmd->add_option("--checkpoint", a->checkpoint, "safetensors checkpoint (haargrad's or a converted timm state_dict)")
      ->required();
  cmd->allow_extras();
  cmd->callback([a, cmd] {
    a->overrides = cmd->remaining();
    run_validate(*a);
  });
});

}  // namespace hg::app
