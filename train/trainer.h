// The training loop of `haargrad train`: config -> data, model (initial_checkpoint), optimizer
// (layer_decay), schedule, model EMA (model_ema) -> epochs of train + eval (model and EMA; none
// with val_split '', each epoch then ranked by its train loss), with a run folder (args.yaml,
// summary.csv, curves.png, log, checkpoints), resume, Ctrl-C recovery and a final report
// (accuracy, img/s, peak memory by category).
#pragma once

#include <functional>
#include <string>

#include "core/dtype.h"
#include "kernels/wtconv.h"
#include "models/config.h"
#include "train/config.h"

namespace hg {
class ConvNeXt;
}

namespace hg::train {

/// "cpu" or "cuda" for cfg.device ("auto": cuda when a GPU is usable). Throws hg::Error for "cuda"
/// without a GPU / without the CUDA build, saying which of the two (cuda_unavailable_reason).
Device resolve_device(const std::string& device);
/// Why device cuda cannot be used here: this binary was built without CUDA (and how to build it),
/// or the driver reports no usable GPU; empty when a GPU is usable.
std::string cuda_unavailable_reason();

struct TrainOptions {
  int64_t stop_after_epoch = -1;  ///< stop (checkpointed) after this many epochs; -1 = run all
  bool plain_output = false;      ///< force log lines instead of a progress bar
  /// A line on the config's source for the run's log.txt (the command said it on the console
  /// already), e.g. which args.yaml a `train --resume CKPT` without a config read; "" = none.
  std::string config_note;
  /// Fault injection (tests): called after every training step with the epoch (0-based), the steps
  /// done in it (1-based) and the model; returning true stops the run as Ctrl-C does (a recovery
  /// checkpoint is written). Empty = none.
  std::function<bool(int64_t epoch, int64_t step, ConvNeXt& model)> after_step;
  /// Fault injection (tests): called after every evaluation batch with the epoch (0-based) and the
  /// batches this process has evaluated in it (1-based, the model's then the EMA's); returning true
  /// stops the run as SIGUSR1 does, on this rank alone (a signal that reaches one rank during the
  /// evaluation). Empty = none.
  std::function<bool(int64_t epoch, int64_t batches)> after_eval_batch;
  /// Fault injection (tests): called once at the end of start-up, before the run's last stop check
  /// ahead of its first step (a test raises a stop signal there: it must end the run before
  /// training, as the handler's line says). Empty = none.
  std::function<void()> before_training;
  /// Fault injection (tests): called after an epoch's last stop check, before its checkpoints are
  /// written, with the epoch (0-based) (a test raises a stop signal there: in the run's last epoch
  /// the run ends normally, as the handler's line must say). Empty = none.
  std::function<void(int64_t epoch)> before_checkpoints;
};

struct TrainResult {
  std::string run_dir;
  double best_top1 = -1;  ///< % (the EMA's top-1 in a run with a model EMA, as timm); -1 = none
  /// A run without validation (val_split ''): the lowest mean train loss of an epoch, which picks
  /// best_epoch (and model_best); -1 = none, or a run with validation
  double best_train_loss = -1;
  int64_t best_epoch = -1;
  double last_top1 = -1, last_top5 = -1;  ///< % (the model's; -1 = none, no validation)
  double last_top1_ema = -1;              ///< % (the model EMA's; -1 = none)
  double train_img_per_sec = 0;           ///< images / training seconds, over the run (-1: no step)
  double data_img_per_sec =
      0;  ///< loader workers' sustainable rate (-1: not known, a run resumed finished)
  double data_wait_fraction =
      0;  ///< share of training time spent waiting for a batch (train/data_wait.h: on a GPU, the
          ///< time it had no work while the host waited for one), [0, 1] (-1: not known)
  double peak_mib = 0;              ///< peak live bytes on the training device (MiB)
  int64_t corrupt_skipped = 0;
  bool interrupted = false;  ///< Ctrl-C or SIGTERM: a recovery checkpoint was written
  /// A stop signal came during start-up: the run ended before its first step, nothing was trained
  /// or saved; run_dir is empty when no folder was opened yet or a new one was given back
  bool stopped_before_training = false;
  int stop_signal = 0;  ///< the signal that stopped it (SIGINT, SIGTERM, ...); 0 = none
};

/// Runs (or resumes: cfg.resume = checkpoint path or "auto") the training described by cfg.
/// SIGINT (Ctrl-C) and SIGTERM during the epochs stop it after the current step with a recovery
/// checkpoint (TrainResult::interrupted); during start-up, before the first step, with nothing
/// saved (TrainResult::stopped_before_training); once the last epoch is evaluated, not at all (the
/// run saves it and ends normally). A run that fails before its first step gives its
/// new folder back; one that fails later writes the error into its log.txt. Throws hg::Error on bad
/// config / data, on a failed file write (naming the file; the previous files stay intact), and
/// when the run diverges: a non-finite loss (naming the epoch and step) or a non-finite evaluation
/// (no checkpoint is written from such a state, and the message names the checkpoint the run can go
/// on from and the best one). A new run claims a folder of its own (run_folder.h); a resume may
/// change the schedule, which args.yaml then records (resume_settings.h).
TrainResult train(Config cfg, const TrainOptions& opts = {});

/// The WTConv path config key wtconv_mode names ("fused", "reference"), for the model's
/// set_wtconv_mode: train, its EMA, validate and infer run the path the config asks for.
kernels::WTConvMode wtconv_mode_of(const Config& cfg);

}  // namespace hg::train
