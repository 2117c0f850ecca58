// Training checkpoints: one safetensors file holding the model weights (timm names, loadable by
// PyTorch as a state_dict), the optimizer state (under "optimizer."), and in __metadata__ the
// position in the run (epoch, step, updates), the best metric, the RNG states and the config.
// Written atomically (safetensors::save: temporary file + fsync + rename), so a run killed while
// saving leaves the previous checkpoint intact and loadable.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "models/convnext.h"
#include "train/optimizer.h"

namespace hg::train {

/// Where a run stands; everything resume needs besides weights and optimizer state.
struct TrainState {
  int64_t epoch = 0;          ///< epoch to run next (or in progress, when step_in_epoch > 0)
  int64_t step_in_epoch = 0;  ///< micro-batches of `epoch` already done (recovery checkpoints)
  int64_t updates = 0;        ///< optimizer updates so far
  double best_top1 = -1;      ///< best eval top-1 so far (%), -1 = none yet
  int64_t best_epoch = -1;
  double epoch_loss_sum = 0;  ///< partial epoch: sum of micro-batch losses so far
  int64_t epoch_images = 0;   ///< partial epoch: images so far
  /// The evaluation of the epoch this checkpoint closes (always finite: the trainer never saves a
  /// state whose evaluation was not); -1 = none (recovery checkpoints, files from older versions).
  double eval_top1 = -1, eval_top5 = -1, eval_loss = -1;
  /// Ranks of the run that wrote it (data parallel: batch_size is per rank); 1 in older files.
  int64_t world_size = 1;
};

/// Writes model + optimizer + state + config_yaml to `path` atomically. Data parallel: every rank
/// calls it (a ZeRO-1 optimizer gathers its shards), rank 0 alone writes.
void save_checkpoint(const std::string& path, const ConvNeXt& model, const Optimizer* opt,
                     const TrainState& state, const std::string& config_yaml);

/// Reads a checkpoint written by save_checkpoint (or any safetensors state_dict with timm names:
/// then only the weights are loaded and the state is the default). Throws hg::Error naming the file
/// and the mismatching keys. `opt` may be null (validation).
TrainState load_checkpoint(const std::string& path, ConvNeXt& model, Optimizer* opt);

/// The config YAML stored in a checkpoint's metadata ("" when absent).
std::string checkpoint_config_yaml(const std::string& path);

/// The state stored in a checkpoint, reading only its header (cheap for large files); nullopt for
/// a file without one (a plain state_dict). Throws hg::Error naming the file when it cannot be read
/// or its metadata is malformed.
std::optional<TrainState> read_train_state(const std::string& path);

}  // namespace hg::train
