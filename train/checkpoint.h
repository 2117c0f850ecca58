// Training checkpoints: one safetensors file holding the model weights (timm names, loadable by
// PyTorch as a state_dict), the optimizer state (under "optimizer."), the model EMA's weights when
// the run keeps one (under "state_dict_ema.", timm's checkpoint key), and in __metadata__ the
// position in the run (epoch, step, updates), the best metric, a plateau schedule's state, the RNG
// states and the config.
// Written atomically (safetensors::save: temporary file + fsync + rename), so a run killed while
// saving leaves the previous checkpoint intact and loadable.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "models/convnext.h"
#include "train/optimizer.h"
#include "train/schedule.h"

namespace hg::train {

/// Where a run stands; everything resume needs besides weights and optimizer state.
struct TrainState {
  int64_t epoch = 0;          ///< epoch to run next (or in progress, when step_in_epoch > 0)
  int64_t step_in_epoch = 0;  ///< micro-batches of `epoch` already done (recovery checkpoints)
  int64_t updates = 0;        ///< optimizer updates so far
  double best_top1 = -1;      ///< best eval top-1 so far (%), -1 = none yet (or no validation)
  int64_t best_epoch = -1;    ///< the epoch of the best so far by the run's metric; -1 = none yet
  /// A run without validation (val_split ''): the lowest mean train loss of an epoch so far, which
  /// picks its best_epoch instead of best_top1; -1 = none yet, or a run with validation.
  double best_train_loss = -1;
  double epoch_loss_sum = 0;  ///< partial epoch: sum of micro-batch losses so far
  int64_t epoch_images = 0;   ///< partial epoch: images so far
  /// Partial epoch: its training so far (a run stopped inside an epoch or its evaluation), so that
  /// the resumed epoch's summary row has its img/s and peak: seconds, images timed, seconds
  /// waiting for data, peak MiB. 0 in older files.
  double epoch_seconds = 0;
  int64_t epoch_images_timed = 0;
  double epoch_wait_seconds = 0, epoch_peak_mib = 0;
  /// The evaluation of the epoch this checkpoint closes (always finite: the trainer never saves a
  /// state whose evaluation was not); -1 = none (recovery checkpoints, files from older versions).
  double eval_top1 = -1, eval_top5 = -1, eval_loss = -1;
  /// The same for the model EMA; -1 = the run keeps none. With an EMA, best_top1 and the
  /// checkpoint_hist ranking follow the EMA's top-1 (timm: the EMA's metrics replace the model's).
  double eval_top1_ema = -1, eval_top5_ema = -1, eval_loss_ema = -1;
  /// The mean train loss of the epoch this checkpoint closes (summary.csv's train_loss), which
  /// ranks checkpoint_hist in a run without validation; -1 = none (recovery checkpoints, files
  /// from older versions).
  double train_loss = -1;
  /// Ranks of the run that wrote it (data parallel: batch_size is per rank); 1 in older files.
  int64_t world_size = 1;
  /// The run folder it was written in (run_marker_id of its run.json), so that a copy into another
  /// run's folder is told apart from that run's own checkpoints; "" in older files.
  std::string run;
  /// The training data the run read when it wrote it: the train split's image count and a hash of
  /// its class names (hex; "" where the data set has no names), so that a resume can say when the
  /// data changed since; 0 and "" in older files.
  int64_t train_images = 0;
  std::string train_classes;
  /// The train split's class names in label order (logit j is class_names[j]), so that infer can
  /// name its classes; empty where the data set has none (IDX, synthetic) and in older files.
  std::vector<std::string> class_names;
  /// sched plateau: the schedule's state after the metrics of the epochs before `epoch` (a
  /// checkpoint closing an epoch holds it after that epoch's metric); nullopt for other scheds.
  std::optional<PlateauState> plateau;
};

/// The prefix of the model EMA's tensors in a checkpoint ("state_dict_ema.<timm name>").
inline constexpr const char* kEmaPrefix = "state_dict_ema.";

/// Writes model + optimizer + EMA (`ema` may be null: none) + state + config_yaml to `path`
/// atomically. Data parallel: every rank calls it (a ZeRO-1 optimizer gathers its shards), rank 0
/// alone writes.
void save_checkpoint(const std::string& path, const ConvNeXt& model, const Optimizer* opt,
                     const TrainState& state, const std::string& config_yaml,
                     const ConvNeXt* ema = nullptr);

/// FNV-1a over class names in their label order, each with its ending 0 byte.
uint64_t class_names_hash(const std::vector<std::string>& names);

/// The tag of a train split's class names, in their label order, that TrainState::train_classes
/// records (a hash in hex; "" for a split without class names): a resume compares it with the
/// folders it finds.
std::string class_names_tag(const std::vector<std::string>& names);

/// When `recorded` (a checkpoint's TrainState::train_classes) is the tag of `names` sorted
/// byte-wise, and that order is not `names`' own (timm's natural order, data/image_folder.h): why
/// the checkpoint's labels stand for other classes here (haargrad numbered classes byte-wise
/// before 2026-12-07), with what to do; else "".
std::string byte_order_classes_note(const std::string& recorded,
                                    const std::vector<std::string>& names);

/// When a checkpoint's run trained on other class folders than `names` (a data set's class names
/// in label order; its TrainState::train_classes is not their tag) and byte_order_classes_note does
/// not explain it: what that means, with the first label that differs where the checkpoint
/// recorded its class names; else "" (also for a checkpoint or data set without class names).
std::string other_classes_note(const TrainState& st, const std::vector<std::string>& names);

/// Reads a checkpoint written by save_checkpoint (or any safetensors state_dict with timm names:
/// then only the weights are loaded and the state is the default). Throws hg::Error naming the file
/// and the mismatching keys. `opt` may be null (validation). EMA tensors are not read here
/// (load_ema_weights).
TrainState load_checkpoint(const std::string& path, ConvNeXt& model, Optimizer* opt);

/// Copies the checkpoint's EMA weights ("state_dict_ema.*") into `model` (the trainer's EMA on a
/// resume; validate --use-ema; export --ema). Returns false, loading nothing, when the file holds
/// no EMA tensor; throws hg::Error naming the file and keys when they do not fit the model.
bool load_ema_weights(const std::string& path, ConvNeXt& model);

/// Where the model of the config stored in a checkpoint (its metadata `meta`) differs from `model`
/// in a key that sizes its tensors: "the config stored in it has num_classes 4 (the model: 10)",
/// for the error of a load that does not fit (it says which key to set). "" when the file stores
/// no config (a timm state_dict) or none of those keys differs. `with_classes` false leaves
/// num_classes out (fine-tuning takes another one).
std::string stored_config_differences(const std::map<std::string, std::string>& meta,
                                      const ModelConfig& model, bool with_classes = true);

/// The config YAML stored in a checkpoint's metadata ("" when absent).
std::string checkpoint_config_yaml(const std::string& path);

/// The state stored in a checkpoint, reading only its header (cheap for large files); nullopt for
/// a file without one (a plain state_dict). Throws hg::Error naming the file when it cannot be read
/// or its metadata is malformed: a field of its state out of range, or a state in a file whose
/// metadata 'format' is not "haargrad-train-checkpoint-1" (or missing), naming that field.
/// load_checkpoint checks the same.
std::optional<TrainState> read_train_state(const std::string& path);

/// Why `path` is no checkpoint file to read, for a message after its name: " does not exist", or
/// " cannot be read: <why>" for a link that loops or a folder that cannot be searched (there, not
/// missing), or " is not a regular file" (a folder, a device). One wording for every command.
std::string no_file_reason(const std::string& path);

/// The config a run folder's args.yaml (`path`) records: its text, or "" where the file is
/// missing, no regular file, or blank (an empty args.yaml records nothing: the config the
/// checkpoint stores is the run's then). Throws hg::Error naming the file when it cannot be read.
std::string recorded_args_yaml(const std::string& path);

}  // namespace hg::train
