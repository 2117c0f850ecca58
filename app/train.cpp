// `haargrad train CONFIG.yaml [--key value ...]`: the main job (see train/trainer.h).
#include <chrono>
#include <iomanip>
#include <cstdio>

#include "app/command.h"
#include "core/error.h"
#include "train/config.h"
#include "train/trainer.h"

namespace hg::app {
namespace {

struct TrainArgs {
  std::string config;
  std::vector<std::string> overrides;
  int64_t stop_after_epoch = -1;
  bool plain = false;
};

}  // namespace

HG_REGISTER_COMMAND([](CLI::App& root) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = root.add_subcommand("train", "Train a model from a YAML config; any config key can be overridden as "
                                                "--key value (e.g. --epochs 3 --device cpu; train/config.h lists them)");
  cmd->add_option("config", a->config, "YAML config, e.g. configs/fashion_mnist.yaml or a run's args.yaml")->required();
  cmd->add_option("--stop-after-epoch", a->stop_after_epoch,
                  "stop (with checkpoints) after this many epochs; resume later with --resume");
  cmd->add_flag("--plain", a->plain, "log lines instead of a progress bar, even on a terminal");
  cmd->allow_extras();  // everything else is a --key value config override
  cmd->callback([a, cmd] {
    a->overrides = cmd->remaining();
    train::Config cfg = train::load_config(a->config);
    train::apply_overrides(cfg, a->overrides);
    train::TrainOptions opts;
    opts.stop_after_epoch = a->stop_after_epoch;
    opts.plain_output = a->plain;
    const auto t0 = std::chrono::steady_clock::now();
    train::TrainResult r = train::train(cfg, opts);
    const double minutes = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 60.0;
    auto pct = [](double v) { return v < 0 ? std::string("n/a") : str(std::fixed, std::setprecision(2), v); };
    std::printf("best_top1 %s  last_top1 %s  last_top5 %s  train_img_per_sec %.1f  data_img_per_sec %.1f  "
                "data_wait_pct %.1f  peak_mib %.1f  minutes %.2f\n",
                pct(r.best_top1).c_str(), pct(r.last_top1).c_str(), pct(r.last_top5).c_str(),
                r.train_img_per_sec, r.data_img_per_sec, 100 * r.data_wait_fraction, r.peak_mib, minutes);
  });
});

}  // namespace hg::app
