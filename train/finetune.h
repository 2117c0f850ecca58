// Fine-tuning start (config key initial_checkpoint; timm's --initial-checkpoint, with the head
// adaptation of timm's pretrained loading): the weights of a checkpoint go into a freshly built
// model, nothing else (no optimizer state, no run position). A checkpoint of a run with a model
// EMA gives the EMA's weights (state_dict_ema.*), as timm's load_checkpoint does by default. The
// checkpoint is a haargrad training checkpoint or any safetensors state_dict with timm names (a
// converted timm ConvNeXt / WTConvNeXt). When its classifier has another number of classes than the
// model (fine-tuning on a new label set), the model's head.fc keeps its fresh initialisation, as
// timm's pretrained + num_classes does, and a warning says so. RGB weights into a gray model
// (in_chans 1) have the stem's three input channels summed into one, as timm's adapt_input_conv
// does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "models/convnext.h"

namespace hg::train {

struct InitialCheckpoint {
  bool head_reinitialised = false;    ///< the checkpoint's head did not fit and was left out
  int64_t checkpoint_classes = 0;     ///< classes of the checkpoint's head.fc (0 when it has none)
  bool stem_channels_summed = false;  ///< RGB weights into a gray model (in_chans 1)
  bool ema = false;                   ///< the model EMA's weights (state_dict_ema.*) were loaded
};

/// Throws hg::Error naming `path` when it is no file, its safetensors header cannot be read, or
/// the file is cut short: what can be known before the model is built and the data listed.
void check_initial_checkpoint(const std::string& path);

/// Loads the weights of `path` into `model` as described above. Throws hg::Error naming the file
/// and the keys for a checkpoint that does not fit otherwise (missing, unexpected or mis-shaped
/// tensors besides the head).
InitialCheckpoint load_initial_checkpoint(const std::string& path, ConvNeXt& model);

/// timm train.py's --head-init-scale and --head-init-bias (config keys head_init_scale and
/// head_init_bias) on the classifier (head.fc) of a made model: its weight and bias multiplied by
/// `scale`, then its bias set to `bias`; either may be absent. Returns the line that says what was
/// done (for the log).
std::string apply_head_init(ConvNeXt& model, std::optional<double> scale,
                            std::optional<double> bias);

}  // namespace hg::train
